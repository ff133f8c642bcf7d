package saga_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/strandhq/strand/engine"
	"github.com/strandhq/strand/saga"
	"github.com/strandhq/strand/store/sqlite"
	"github.com/strandhq/strand/worker"
	"github.com/strandhq/strand/workflow"
)

// The services a purchase touches, as steps: each forward step's result is
// what its compensation gets.
func ReserveStock(ctx context.Context, sku string) (string, error) { return "hold-" + sku, nil }
func ReleaseStock(ctx context.Context, hold string) (string, error) {
	fmt.Println("released", hold)
	return "released", nil
}
func ChargeCard(ctx context.Context, sku string) (string, error) { return "charge-" + sku, nil }
func RefundCard(ctx context.Context, charge string) (string, error) {
	fmt.Println("refunded", charge)
	return "refunded", nil
}
func BookCourier(ctx context.Context, sku string) (string, error) {
	if sku == "piano" {
		return "", errors.New("no courier carries a piano") // final: the saga compensates
	}
	return "courier-" + sku, nil
}

// Purchase is the saga: reserve, charge, book; a step that fails for good
// undoes the ones before it, last first.
func Purchase(ctx workflow.Context, sku string) (string, error) {
	s := saga.New(ctx, saga.Options{Name: "purchase"})
	s.Step("reserve", ReserveStock, sku).Compensate(ReleaseStock)
	s.Step("charge", ChargeCard, sku).Compensate(RefundCard)
	var courier string
	err := s.Step("book", BookCourier, sku).Get(&courier)
	return courier, s.End(err)
}

// A saga on an embedded engine: one purchase completes, one is compensated;
// the records tell each step's forward and compensation state.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "strand-saga-example")
	defer os.RemoveAll(dir)
	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(dir, "strand.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	if _, _, err := st.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	eng, err := engine.Open(ctx, st, engine.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()

	w := worker.New(eng, worker.Options{})
	worker.RegisterWorkflow(w, Purchase)
	worker.RegisterStep(w, ReserveStock)
	worker.RegisterStep(w, ReleaseStock)
	worker.RegisterStep(w, ChargeCard)
	worker.RegisterStep(w, RefundCard)
	worker.RegisterStep(w, BookCourier)
	if err := w.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer w.Stop(context.Background())

	// A saga's id (here the purchase's) runs once: sent again, it is refused.
	sagas := saga.NewClient(eng, "")
	for _, sku := range []string{"lamp", "piano"} {
		run, err := saga.Start(ctx, sagas, Purchase, sku, saga.StartOptions{ID: "purchase-" + sku})
		if err != nil {
			log.Fatal(err)
		}
		out, err := run.Get(ctx)
		fmt.Println(sku+":", out, err)
	}

	rec, err := sagas.Get(ctx, "purchase-piano")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(rec.Name, rec.State)
	for _, s := range rec.Steps {
		fmt.Println(s.Name, s.Forward.State, s.Compensation.State)
	}
	// Output:
	// lamp: courier-lamp <nil>
	// refunded charge-piano
	// released hold-piano
	// piano:  saga purchase: step book failed (compensated): no courier carries a piano
	// purchase compensated
	// reserve completed completed
	// charge completed completed
	// book failed none
}

package resources_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/strandhq/strand/access"
	"github.com/strandhq/strand/api"
	"github.com/strandhq/strand/dag/resources"
	"github.com/strandhq/strand/internal/testdb"
	"github.com/strandhq/strand/store"
)

// TestSecretsAndVersions, on each store: a data source's password is in no
// record in clear, comes back only to a worker's service account and only
// under the same key; a resource bigger than a chunk comes back whole at
// each version; one over the limit stores nothing; and another user may
// neither use nor see them without a grant.
func TestSecretsAndVersions(t *testing.T) {
	testdb.Backends(t, func(t *testing.T, st store.Store) {
		key := bytes.Repeat([]byte{7}, 32)
		c, err := resources.New(st, resources.Options{Key: key, MaxSize: 2 << 20,
			Check: func(context.Context, resources.Connection) error { return nil }})
		if err != nil {
			t.Fatal(err)
		}
		alice := access.WithIdentity(context.Background(), access.Identity{Name: "alice", Kind: access.KindUser})
		bob := access.WithIdentity(context.Background(), access.Identity{Name: "bob", Kind: access.KindUser})
		worker := access.WithIdentity(context.Background(), access.Identity{Name: "w", Kind: access.KindService,
			Grants: map[string][]access.Role{"default": {access.Worker}}})
		const secret = "s3cr3t-pass"
		d, err := c.PutDataSource(alice, resources.DataSourceSpec{Name: "wh", Type: resources.TypePostgreSQL,
			URL: "postgres://etl@db.example:5432/wh", Password: secret}, false)
		if err != nil || !d.HasPassword || strings.Contains(d.URL, secret) {
			t.Fatalf("create: %+v %v", d, err)
		}
		recs, err := st.ListRecords(context.Background(), "dag-datasource", "")
		if err != nil || len(recs) != 1 || bytes.Contains(recs[0].Value, []byte(secret)) {
			t.Fatalf("the stored record holds the password in clear, or is missing: %v %d", err, len(recs))
		}
		if _, err := c.Connect(alice, "wh"); !errors.Is(err, api.ErrPermissionDenied) {
			t.Fatalf("a person reading the password: %v", err)
		}
		conn, err := c.Connect(worker, "wh")
		if err != nil || conn.URL != "postgres://etl:"+secret+"@db.example:5432/wh" {
			t.Fatalf("a worker reading the connection: %+v %v", conn, err)
		}
		other, _ := resources.New(st, resources.Options{Key: bytes.Repeat([]byte{8}, 32)})
		if _, err := other.Connect(worker, "wh"); !errors.Is(err, api.ErrFailedPrecondition) || !strings.Contains(err.Error(), "does not decrypt") {
			t.Fatalf("another key: %v", err)
		}
		if _, err := c.DataSource(bob, "wh"); !errors.Is(err, api.ErrPermissionDenied) {
			t.Fatalf("bob without a grant: %v", err)
		}
		if l, _ := c.DataSources(bob); len(l) != 0 {
			t.Fatalf("bob lists %v", l)
		}

		v1 := bytes.Repeat([]byte("one\n"), 300<<10) // 1.2 MiB: three chunks
		v2 := []byte("two\n")
		if _, err := c.Upload(alice, "lib/job.sh", v1); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Upload(alice, "lib/job.sh", v2); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Upload(alice, "big.jar", make([]byte, 2<<20+1)); !errors.Is(err, store.ErrPayloadTooLarge) || !strings.Contains(err.Error(), "over the limit of 2097152 bytes (2 MiB") {
			t.Fatalf("over the limit: %v", err)
		}
		if _, err := c.Resource(alice, "big.jar"); !errors.Is(err, api.ErrNotFound) {
			t.Fatalf("a refused upload was stored: %v", err)
		}
		for v, want := range map[int32][]byte{1: v1, 2: v2, 0: v2} {
			ver, got, err := c.Content(worker, "lib/job.sh", v)
			if err != nil || !bytes.Equal(got, want) || (v != 0 && ver.Version != v) {
				t.Fatalf("version %d: %d bytes, %v", v, len(got), err)
			}
		}
		if _, _, err := c.Content(bob, "lib/job.sh", 0); !errors.Is(err, api.ErrPermissionDenied) {
			t.Fatalf("bob reading without a grant: %v", err)
		}
		if _, err := c.GrantResource(bob, "lib/job.sh", "bob", false); !errors.Is(err, api.ErrPermissionDenied) {
			t.Fatalf("bob granting himself: %v", err)
		}
		if _, err := c.GrantResource(alice, "lib/job.sh", "bob", false); err != nil {
			t.Fatal(err)
		}
		a, err := c.CheckUses(bob, []resources.Use{{Kind: resources.UseResource, Name: "lib/job.sh", Version: 1},
			{Kind: resources.UseResource, Name: "lib/job.sh", Version: 9}, {Kind: resources.UseDataSource, Name: "wh"}})
		if err != nil || !a[0].Exists || !a[0].Allowed || a[1].Exists || !a[2].Exists || a[2].Allowed || a[2].Owner != "alice" {
			t.Fatalf("bob's uses: %+v %v", a, err)
		}
		if err := c.DeleteResource(alice, "lib/job.sh"); err != nil {
			t.Fatal(err)
		}
		if left, _ := st.ListRecords(context.Background(), "dag-resource-chunk", ""); len(left) != 0 {
			t.Fatalf("%d chunks left after delete", len(left))
		}
	})
}

package sdk

import (
	"github.com/strandhq/strand/api"
)

// ReceiveMessage waits for the next message of name with correlation key
// key (see api.Messages). It tells the key's mailbox that this run waits,
// starting the mailbox if it has no run, and the future is ready with the
// message once the mailbox delivered it into this run's history. When ctx
// is canceled first, the wait is withdrawn and the future fails with ctx's
// error; a message already on its way still lands in the history, and the
// run's next ReceiveMessage of the same name and key returns it.
func ReceiveMessage(ctx Context, name, key string) Future[api.MessageDelivery] {
	c := ctx.state()
	inst := c.inst
	f, s := newFuture[api.MessageDelivery](inst)
	ch := GetSignalChannel[api.MessageDelivery](ctx, api.MessageDeliverySignal(name, key))
	if d, ok := ch.ReceiveAsync(); ok {
		s.setValue(d, nil) // one that came after an earlier wait was withdrawn
		return f
	}
	if c.err != nil {
		s.setValue(api.MessageDelivery{}, c.err)
		return f
	}
	self := api.RunRef{Namespace: inst.info.Namespace, WorkflowID: inst.info.WorkflowID, RunID: inst.info.RunID}
	waiter := api.MessageWaiter{ID: UUID(ctx), Run: self, Since: Now(ctx)}
	mailbox := api.Target{Namespace: inst.info.Namespace, WorkflowID: api.MailboxWorkflowID(name, key)}
	sent := SignalExternalWithStart(ctx, mailbox, api.MailboxSignal,
		api.MailboxCommand{Kind: api.MailboxWait, Name: name, CorrelationKey: key, Waiter: &waiter},
		&api.SignalStart{WorkflowType: api.MailboxWorkflowType, Queue: api.SystemQueue})
	unwait := func() {
		SignalExternal(ctx, mailbox, api.MailboxSignal,
			api.MailboxCommand{Kind: api.MailboxUnwait, Name: name, CorrelationKey: key, Waiter: &waiter})
	}
	// A run that returns while it waits withdraws the wait with its last
	// workflow task; the mailbox takes a withdrawal that overtook its wait.
	forget := inst.whenClosing(unwait)
	Go(NewDisconnectedContext(ctx), func(gctx Context) {
		defer forget()
		waiting := true
		for waiting {
			sel := NewSelector(gctx)
			AddReceive(sel, ch, func(ch ReceiveChannel[api.MessageDelivery]) {
				d, _ := ch.ReceiveAsync()
				s.setValue(d, nil)
				waiting = false
			})
			if sent != nil {
				sel.AddFuture(sent, func() {
					if _, err := sent.Get(gctx); err != nil {
						s.setValue(api.MessageDelivery{}, err) // the mailbox never heard of the wait
						waiting = false
					}
					sent = nil
				})
			}
			AddReceive(sel, ctx.Done(), func(ReceiveChannel[struct{}]) {
				unwait()
				s.setValue(api.MessageDelivery{}, ctx.Err())
				waiting = false
			})
			sel.Select(gctx)
		}
	})
	return f
}

// Receive waits for the next message of name with correlation key key,
// as ReceiveMessage does, and decodes its payload into T.
func Receive[T any](ctx Context, name, key string) Future[T] {
	f, set := NewFuture[T](ctx)
	m := ReceiveMessage(ctx, name, key)
	Go(NewDisconnectedContext(ctx), func(gctx Context) {
		var v T
		d, err := m.Get(gctx)
		if err == nil {
			err = Decode(d.Payload, &v)
		}
		set(v, err)
	})
	return f
}

package sdk

import (
	"fmt"
	"runtime/debug"
)

// A workflow's goroutines run one at a time, handing control back and forth
// through channels, so that the order in which they run is the same on every
// replay. A coroutine gives up control only where it blocks on workflow
// state (a future, a channel, a selector).

// exitSignal unwinds a coroutine's stack when its instance is closed.
type exitSignal struct{}

type coroutine struct {
	name     string
	resume   chan bool // true: exit
	yielded  chan struct{}
	started  bool
	finished bool
	// progressed says whether the coroutine did anything since it was
	// last resumed.
	progressed bool
	exiting    bool
	panicked   *PanicValue
}

// PanicValue is a panic caught in workflow code.
type PanicValue struct {
	Value any
	Stack string
}

func (p *PanicValue) String() string { return fmt.Sprint(p.Value) }

type scheduler struct {
	coroutines []*coroutine
	current    *coroutine
	closed     bool
}

// spawn adds a coroutine; it first runs on the scheduler's next pass.
func (s *scheduler) spawn(name string, fn func()) *coroutine {
	c := &coroutine{name: name, resume: make(chan bool), yielded: make(chan struct{})}
	s.coroutines = append(s.coroutines, c)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(exitSignal); !ok {
					c.panicked = &PanicValue{Value: r, Stack: string(debug.Stack())}
				}
			}
			c.finished = true
			c.progressed = true
			c.yielded <- struct{}{}
		}()
		if exit := <-c.resume; exit {
			panic(exitSignal{})
		}
		fn()
	}()
	return c
}

// block yields until cond holds. It must be called from a coroutine.
func (s *scheduler) block(cond func() bool) {
	c := s.current
	if c == nil {
		panic("workflow: blocking call outside a workflow goroutine")
	}
	if c.exiting {
		panic(exitSignal{})
	}
	for !cond() {
		c.yielded <- struct{}{}
		if exit := <-c.resume; exit {
			c.exiting = true
			panic(exitSignal{})
		}
		c.progressed = false
	}
	c.progressed = true
}

// runUntilBlocked resumes coroutines in creation order until a whole pass
// makes no progress; it returns the first panic of workflow code.
func (s *scheduler) runUntilBlocked() *PanicValue {
	for {
		progress := false
		for i := 0; i < len(s.coroutines); i++ {
			c := s.coroutines[i]
			if c.finished {
				continue
			}
			c.progressed = !c.started
			c.started = true
			s.current = c
			c.resume <- false
			<-c.yielded
			s.current = nil
			if c.panicked != nil {
				return c.panicked
			}
			if c.progressed {
				progress = true
			}
		}
		// Drop finished coroutines so the list does not grow forever.
		live := s.coroutines[:0]
		for _, c := range s.coroutines {
			if !c.finished {
				live = append(live, c)
			}
		}
		for i := len(live); i < len(s.coroutines); i++ {
			s.coroutines[i] = nil
		}
		s.coroutines = live
		if !progress {
			return nil
		}
	}
}

// close unwinds every coroutine's goroutine.
func (s *scheduler) close() {
	if s.closed {
		return
	}
	s.closed = true
	for _, c := range s.coroutines {
		for !c.finished {
			s.current = c
			c.resume <- true
			<-c.yielded
		}
	}
	s.current = nil
	s.coroutines = nil
}

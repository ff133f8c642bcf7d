package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"syscall"
	"time"
)

// Runtime is what the Go runtime did over a shape's measured phase: the
// process's allocation and collection, which a noisy machine does not
// change, unlike the rates.
type Runtime struct {
	// AllocBytes and Allocs are the heap allocated in the phase.
	AllocBytes, Allocs uint64
	// GCs is how many collections ran, and GCShare the part of the
	// process's CPU they took (marking, assists, sweeping), as the
	// runtime estimates it.
	GCs     uint32
	GCShare float64
	// CPU is the process's CPU time (user and system).
	CPU       time.Duration
	Profiling bool // CPU and allocation profiles were written for the phase
}

// phase measures the runtime over a measured phase and, when dir is set,
// profiles it: NAME.cpu.pprof, and NAME.allocs-{before,after}.pprof to
// compare with go tool pprof -diff_base.
type phase struct {
	dir, name string
	ms        runtime.MemStats
	gc, busy  float64 // runtime/metrics' CPU seconds
	cpu       time.Duration
	cpuFile   *os.File
}

// cpuMetrics are the runtime/metrics read for the collector's share.
var cpuMetrics = []string{"/cpu/classes/gc/total:cpu-seconds", "/cpu/classes/total:cpu-seconds", "/cpu/classes/idle:cpu-seconds"}

// runtimeCPU returns the collector's CPU seconds and the busy ones (the
// total less the idle), as runtime/metrics estimates them: comparable
// with each other only.
func runtimeCPU() (gc, busy float64) {
	s := make([]metrics.Sample, len(cpuMetrics))
	for i, name := range cpuMetrics {
		s[i].Name = name
	}
	metrics.Read(s)
	sec := func(i int) float64 {
		if s[i].Value.Kind() != metrics.KindFloat64 {
			return 0
		}
		return s[i].Value.Float64()
	}
	return sec(0), sec(1) - sec(2)
}

func beginPhase(dir, name string) (*phase, error) {
	p := &phase{dir: dir, name: name}
	if dir != "" {
		if err := p.writeAllocs("before"); err != nil {
			return nil, err
		}
		f, err := os.Create(filepath.Join(dir, name+".cpu.pprof"))
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("bench: CPU profile: %w", err)
		}
		p.cpuFile = f
	}
	runtime.ReadMemStats(&p.ms)
	p.gc, p.busy = runtimeCPU()
	p.cpu = processCPU()
	return p, nil
}

func (p *phase) writeAllocs(when string) error {
	f, err := os.Create(filepath.Join(p.dir, p.name+".allocs-"+when+".pprof"))
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("allocs").WriteTo(f, 0)
}

// end stops the phase's profiles and returns what the runtime did in it.
func (p *phase) end() (Runtime, error) {
	cpu := processCPU()
	gc, busy := runtimeCPU()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rt := Runtime{AllocBytes: ms.TotalAlloc - p.ms.TotalAlloc, Allocs: ms.Mallocs - p.ms.Mallocs, GCs: ms.NumGC - p.ms.NumGC, CPU: cpu - p.cpu}
	if busy > p.busy {
		rt.GCShare = (gc - p.gc) / (busy - p.busy)
	}
	if p.cpuFile != nil {
		pprof.StopCPUProfile()
		if err := p.cpuFile.Close(); err != nil {
			return rt, err
		}
		rt.Profiling = true
		return rt, p.writeAllocs("after")
	}
	return rt, nil
}

// processCPU is the CPU time this process used, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

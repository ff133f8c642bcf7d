package task

import (
	"runtime"
	"syscall"
)

// setParentDeath makes the kernel SIGKILL the script's bash when the
// worker dies. Linux sends that signal when the thread that started the
// child exits (Go issue 27505), so lockThread keeps the starting goroutine
// on its thread until bash has been waited for.
func setParentDeath(a *syscall.SysProcAttr) {
	a.Pdeathsig = syscall.SIGKILL
}

// lockThread pins the calling goroutine to its OS thread; the returned
// function unpins it.
func lockThread() func() {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}

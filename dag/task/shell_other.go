//go:build !linux

package task

import "syscall"

// setParentDeath does nothing where there is no parent-death signal; the
// watchdog alone kills the script's process group when the worker dies.
func setParentDeath(*syscall.SysProcAttr) {}

// lockThread does nothing where there is no parent-death signal.
func lockThread() func() { return func() {} }

//go:build linux || darwin

package main

import (
	"os"
	"syscall"
	"unsafe"
)

// terminalWidth reports whether f is a terminal and, if so, its width in
// columns (0 when the terminal does not say).
func terminalWidth(f *os.File) (int, bool) {
	if os.Getenv("TERM") == "dumb" {
		return 0, false
	}
	var ws struct{ rows, cols, x, y uint16 }
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), uintptr(syscall.TIOCGWINSZ), uintptr(unsafe.Pointer(&ws)))
	if errno != 0 {
		return 0, false
	}
	return int(ws.cols), true
}

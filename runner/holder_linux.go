//go:build linux

package runner

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
)

// peerIsMe refuses a unix peer of another uid (SO_PEERCRED). The private
// directory already keeps others out; this holds even if its mode was
// loosened after the holder started.
func peerIsMe(nc net.Conn) error {
	uc, ok := nc.(*net.UnixConn)
	if !ok {
		return errors.New("not a unix connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return fmt.Errorf("peer credentials: %w", cerr)
	}
	if int(cred.Uid) != os.Getuid() {
		return fmt.Errorf("peer pid %d runs as uid %d, not %d", cred.Pid, cred.Uid, os.Getuid())
	}
	return nil
}

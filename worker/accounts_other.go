//go:build unix && !linux

package worker

import (
	"errors"
	"syscall"
)

// ErrCannotSwitch is returned by CanSwitch when this process cannot start
// workers under other accounts.
var ErrCannotSwitch = errors.New("worker: the gateway cannot start workers under other accounts")

// CanSwitch fails off Linux: worker.run_as other than gateway is served on
// Linux only.
func CanSwitch() error { return errors.New("worker: worker.run_as other than gateway needs Linux") }

// DropAmbient does nothing off Linux.
func DropAmbient() error { return nil }

func asAccount(a *syscall.SysProcAttr, acc *Account) {
	a.Credential = &syscall.Credential{Uid: acc.UID, Gid: acc.GID, Groups: append([]uint32{}, acc.Extra...)}
}

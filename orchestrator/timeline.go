package orchestrator

import (
	"github.com/dstgen/dstgen/history"
	"github.com/dstgen/dstgen/session"
)

// ToHistory converts a control-node wall time (Unix ns) to the history's clock.
func ToHistory(controlUnixNS int64, driver session.HostClock, originUnixNS int64) int64 {
	return controlUnixNS + driver.OffsetNS - originUnixNS
}

// Stamp sets fault_epoch on unstamped ops overlapping a window.
func Stamp(ops []history.Op, windows []session.FaultWindow, uncertaintyNS int64) (stamped, ambiguous int) {
	return 0, 0
}

// StampFile rewrites a dst-history/1 file in place with Stamp applied.
func StampFile(path string, windows []session.FaultWindow, uncertaintyNS int64) (stamped, ambiguous int, err error) {
	return 0, 0, nil
}

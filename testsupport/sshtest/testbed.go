package sshtest

import "testing"

// Testbed is n simulated hosts: network namespaces on one bridge, each
// with its own sshd (own host key, trusted in Keys.KnownHosts) and its own
// work dir, because namespaces share the filesystem. It is what the
// multi-host deploy and workflow tests run on.
type Testbed struct {
	Keys     *Keys
	Servers  []*Server
	Workdirs []string
}

// NewTestbed starts n hosts; everything is removed in t.Cleanup.
func NewTestbed(t testing.TB, n int) *Testbed {
	t.Helper()
	nt := NewNet(t, n)
	tb := &Testbed{Keys: NewKeys(t)}
	for _, h := range nt.Hosts {
		tb.Servers = append(tb.Servers, Start(t, tb.Keys, Options{NetNS: h.NS, Addr: h.Addr}))
		tb.Workdirs = append(tb.Workdirs, Workdir(t))
	}
	tb.Keys.Trust(t, tb.Servers...)
	return tb
}

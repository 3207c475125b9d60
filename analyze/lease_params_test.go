package analyze

import (
	"reflect"
	"testing"

	"github.com/dstgen/dstgen/session"
)

// The lease checker gets the TTL the plan states and the larger of the
// plan's and the run's measured clock uncertainty.
func TestLeaseParamsFromPlanAndRun(t *testing.T) {
	measured := &session.Run{Timeline: &session.Timeline{Hosts: []session.HostClock{{Host: "c1", UncertaintyNS: 3e6}, {Host: "c2", UncertaintyNS: 80e6}}}}
	cases := []struct {
		name string
		text string
		run  *session.Run
		want map[string]string
	}{
		{"ttl and uncertainty in the plan", "lease-safety with lease TTL 10s, clock uncertainty 50ms", nil, map[string]string{"ttl": "10s", "uncertainty": "50ms"}},
		{"ttl= form", "lease-safety (ttl=2s)", nil, map[string]string{"ttl": "2s"}},
		{"measured uncertainty wins when larger", "lease-safety, TTL 10s, uncertainty 50ms", measured, map[string]string{"ttl": "10s", "uncertainty": "80ms"}},
		{"plan uncertainty wins when larger", "lease-safety, TTL 10s, uncertainty 1s", measured, map[string]string{"ttl": "10s", "uncertainty": "1s"}},
		{"no ttl stated: the checker names the param", "lease-safety", nil, map[string]string{}},
		{"a request timeout is not a ttl", "1 s request timeout; lease-safety", nil, map[string]string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := leaseParams(c.text, c.run); !reflect.DeepEqual(got, c.want) {
				t.Errorf("leaseParams(%q) = %v, want %v", c.text, got, c.want)
			}
		})
	}
}

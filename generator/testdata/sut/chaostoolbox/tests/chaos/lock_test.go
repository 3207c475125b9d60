//go:build chaos

package chaos

import "testing"

// TestMutualExclusionUnderPartition isolates the leader while clients
// contend for one lock and checks no two clients hold it at once.
func TestMutualExclusionUnderPartition(t *testing.T) {
	t.Skip("needs a running cluster: make cluster-up")
}

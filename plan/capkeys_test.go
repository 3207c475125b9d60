package plan

import "testing"

func TestCapKeys(t *testing.T) {
	reqs := []EnvReq{{Requirement: "iptables (CAP_NET_ADMIN)"}, {Requirement: "tc / netem"}, {Requirement: "Go toolchain"},
		{Requirement: "etcd-client (etcdctl)"}, {Requirement: "Go toolchain"}, {Requirement: "(x)"},
		{Requirement: "MinIO / S3-compatible"}, {Requirement: "(("}}
	want := []string{"iptables", "tc_netem", "go_toolchain", "etcd_client", "go_toolchain_2", "x", "minio_s3_compatible", ""}
	got := CapKeys(reqs)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("CapKeys[%d] (%q) = %q, want %q", i, reqs[i].Requirement, got[i], want[i])
		}
	}
}

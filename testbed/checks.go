package testbed

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// ErrNeedsRoot is what CheckRoot returns for any uid but 0.
var ErrNeedsRoot = errors.New("needs root (creates network namespaces and a bridge); run it with sudo")

// CheckRoot refuses any effective uid but 0.
func CheckRoot(euid int) error {
	if euid != 0 {
		return ErrNeedsRoot
	}
	return nil
}

// Tool is a program the testbed runs and the Debian package that has it.
type Tool struct {
	Name    string // looked up on PATH; an absolute path is checked as it is
	Package string
}

// RequiredTools are the programs Up and Down run.
func RequiredTools() []Tool {
	return []Tool{
		{"ip", "iproute2"},
		{sshdPath, "openssh-server"},
		{"useradd", "passwd"},
		{"usermod", "passwd"},
		{"userdel", "passwd"},
	}
}

// CheckTools returns one line naming the first missing tool and its apt
// package; lookPath is exec.LookPath (a parameter so tests can hide tools).
func CheckTools(lookPath func(string) (string, error)) error {
	for _, t := range RequiredTools() {
		// LookPath checks an absolute path (sshd's) as it is.
		if _, err := lookPath(t.Name); err != nil {
			return fmt.Errorf("%s missing: apt-get install %s", t.Name, t.Package)
		}
	}
	return nil
}

// Iface is a network interface and its addresses.
type Iface struct {
	Name  string
	Addrs []netip.Prefix
}

// LocalIfaces lists this network namespace's interfaces and addresses.
func LocalIfaces() ([]Iface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	var out []Iface
	for _, i := range ifs {
		addrs, err := i.Addrs()
		if err != nil {
			return nil, fmt.Errorf("addresses of %s: %w", i.Name, err)
		}
		f := Iface{Name: i.Name}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				f.Addrs = append(f.Addrs, p)
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// CheckSubnetFree refuses when an address of 10.77.0.0/24 is on an
// interface other than own (the testbed's own bridge when this dir made
// it; "" when it did not), naming the interface: the routes would fight.
func CheckSubnetFree(ifs []Iface, own string) error {
	sub := netip.MustParsePrefix(Subnet)
	for _, i := range ifs {
		if i.Name == own && own != "" {
			continue
		}
		for _, a := range i.Addrs {
			if sub.Overlaps(a) {
				hint := "remove it first"
				if i.Name == Bridge {
					hint = "a testbed of another --dir? run dstgen testbed down --dir THAT_DIR"
				}
				return fmt.Errorf("%s is already in use: %s on %s (%s)", Subnet, a, i.Name, hint)
			}
		}
	}
	return nil
}

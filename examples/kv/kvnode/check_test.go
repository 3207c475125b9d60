package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// -check is the health probe: 0 on 200, 1 on anything else or nobody
// listening, 2 on a bad address.
func TestCheck(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
		}
	}))
	defer ok.Close()
	sick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "starting", http.StatusServiceUnavailable)
	}))
	defer sick.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, c := range []struct {
		addr string
		code int
		err  string
	}{
		{strings.TrimPrefix(ok.URL, "http://"), 0, ""},
		{strings.TrimPrefix(sick.URL, "http://"), 1, "503"},
		{closed, 1, "not healthy"},
		{"nonsense", 2, "want host:port"},
	} {
		var stderr bytes.Buffer
		if got := run(context.Background(), []string{"-check", c.addr}, func(string) string { return "" }, &bytes.Buffer{}, &stderr); got != c.code || !strings.Contains(stderr.String(), c.err) {
			t.Errorf("-check %s: exit %d (%q), want %d with %q", c.addr, got, stderr.String(), c.code, c.err)
		}
	}
}

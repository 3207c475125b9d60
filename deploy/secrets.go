package deploy

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/dstgen/dstgen/env"
	"github.com/dstgen/dstgen/internal/shell"
	"github.com/dstgen/dstgen/runner"
)

// SecretsDir is where deploy keeps the sut.secrets values on the control
// node: .dstgen/secrets beside env.yml (git-ignored by the generated
// .gitignore), one file per name, mode 0600.
func SecretsDir(e *env.Env) string {
	return filepath.Join(filepath.Dir(e.Path), ".dstgen", "secrets")
}

// RemoteSecret is where a secret is installed on a host.
func RemoteSecret(workdir, name string) string { return path.Join(workdir, "secrets", name) }

// secretAlphabet keeps a secret safe in any SQL string, config line or
// shell word: letters and digits only.
const secretAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// secretLen gives about 190 bits.
const secretLen = 32

// ensureSecret returns the local file of secret name, made once: a
// random value of secretLen characters, no newline. An existing file is
// kept as it is (a re-deploy must not change a password the SUT's data
// already holds), but must not be readable by others.
func ensureSecret(dir, name string) (string, error) {
	p := filepath.Join(dir, name)
	fi, err := os.Stat(p)
	switch {
	case err == nil:
		if !fi.Mode().IsRegular() {
			return "", fmt.Errorf("secret %s: %s is not a regular file", name, p)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			return "", fmt.Errorf("secret %s: %s is readable by group or others (mode %v): chmod 600 it", name, p, fi.Mode().Perm())
		}
		return p, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("secret %s: %w", name, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("secret %s: %w", name, err)
	}
	b := make([]byte, secretLen)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("secret %s: %w", name, err)
	}
	for i := range b {
		b[i] = secretAlphabet[int(b[i])%len(secretAlphabet)]
	}
	// O_EXCL: two deploys racing make one value, the loser reads it.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return p, nil
	}
	if err != nil {
		return "", fmt.Errorf("secret %s: %w", name, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(p)
		return "", fmt.Errorf("secret %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(p)
		return "", fmt.Errorf("secret %s: %w", name, err)
	}
	return p, nil
}

// InstallSecrets installs every sut.secrets value at
// <workdir>/secrets/<name> on every host (SUT hosts and clients: the
// SUT's init creates a login with it, the workload logs in with it),
// mode 0600 in a 0700 dir, checked by sha256 like every upload. The value
// is never printed; the line names the secret and where it went.
func (d *Deployer) InstallSecrets(ctx context.Context) error {
	names := d.Env.SUT.Secrets
	if len(names) == 0 {
		return nil
	}
	dir := SecretsDir(d.Env)
	var locals []string
	for _, n := range names {
		p, err := ensureSecret(dir, n)
		if err != nil {
			return err
		}
		locals = append(locals, p)
	}
	return d.each(ctx, d.Hosts, func(ctx context.Context, h Host) error {
		rdir := path.Join(h.Workdir, "secrets")
		if _, err := d.Run(ctx, h, "mkdir -p "+shell.Quote(rdir)+" && chmod 700 "+shell.Quote(rdir)); err != nil {
			return fmt.Errorf("create %s: %w", rdir, err)
		}
		res, err := runner.Push(ctx, d.Pool, []env.Host{h.Host}, locals, rdir, 1, nil)
		if err != nil {
			return fmt.Errorf("install secrets: %w", err)
		}
		for _, r := range res {
			if r.Status != runner.FileOK {
				return fmt.Errorf("install secret %s: %s %s", filepath.Base(r.Source), r.Status, r.Reason)
			}
			d.printf("host=%s secret=%s installed=%s", h.Name, filepath.Base(r.Source), shell.Quote(RemoteSecret(h.Workdir, filepath.Base(r.Source))))
		}
		return nil
	})
}

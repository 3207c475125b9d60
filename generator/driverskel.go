package generator

// The workload-driver skeleton of `dstgen driver new`
// (docs/driver-contract.md §8.2): a main package on the driver package,
// the contract done, a TODO where the client calls go.

import (
	"fmt"
	"go/format"
	"path"

	"github.com/dstgen/dstgen/internal/lazyre"
	"github.com/dstgen/dstgen/templates"
)

// driverNameRE is a driver name: a program name that is also a Go module
// path element.
var driverNameRE = lazyre.New(`^[a-z][a-z0-9_-]*$`)

// DriverSkeleton returns the files of a driver named name in lang, by
// their names in the driver's directory: main.go, and go.mod when withMod
// is set (the directory is in no module yet). The go.mod requires
// github.com/dstgen/dstgen at dstgenVersion; "" (a dstgen built from a
// working tree, which knows no version) leaves the require to the user.
func DriverSkeleton(lang, name, dstgenVersion string, withMod bool) (map[string][]byte, error) {
	if lang != "go" {
		return nil, fmt.Errorf("--lang %q: only go has a skeleton (the contract itself is language-neutral)", lang)
	}
	if !driverNameRE.MatchString(name) {
		return nil, fmt.Errorf("--name %q: want a program name: a-z first, then a-z, 0-9, - or _", name)
	}
	data := map[string]string{"Name": name, "Module": name, "GoVersion": "1.26", "Version": dstgenVersion}
	dir := path.Join(templates.DriverRoot, lang)
	main, err := renderTemplate(templates.FS, dir+"/main.go.tmpl", data)
	if err != nil {
		return nil, err
	}
	if main, err = format.Source(main); err != nil {
		return nil, fmt.Errorf("format the skeleton: %w", err)
	}
	files := map[string][]byte{"main.go": main}
	if withMod {
		mod, err := renderTemplate(templates.FS, dir+"/go.mod.tmpl", data)
		if err != nil {
			return nil, err
		}
		files["go.mod"] = mod
	}
	return files, nil
}

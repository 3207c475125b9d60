// Package conf parses the broker's configuration files.
package conf

func parse() {
	// Keep the keys as items; we do this in order to be able to support
	// includes without losing the original ordering of the keys.
}

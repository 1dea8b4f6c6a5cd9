// Package migrations loads the numbered migration files the SQL stores
// embed: NNN_name.sql, one per schema change, applied in version order.
// Applying them (in which transaction, under which lock, with which
// dialect) stays with each store.
package migrations

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Migration is one file: its version (the number before the first
// underscore), its name (the file name without .sql) and its text.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load reads every *.sql file of dir in fsys, in version order. A file
// whose name does not start with a positive number and an underscore, or
// two files with one version, are an error: a build with them must not
// open a database.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	files, err := fs.Glob(fsys, path.Join(dir, "*.sql"))
	if err != nil {
		return nil, err
	}
	var ms []Migration
	seen := map[int]string{}
	for _, f := range files {
		base := path.Base(f)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: the name must be a version number, an underscore and a name (NNN_name.sql)", base)
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations %s and %s share version %d", prev, base, v)
		}
		seen[v] = base
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: strings.TrimSuffix(base, ".sql"), SQL: string(b)})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	return ms, nil
}

// Newest returns the highest version of ms (0 for none): a database at a
// higher version was migrated by a newer build.
func Newest(ms []Migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

package migrations

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoadOrdersByVersion(t *testing.T) {
	fsys := fstest.MapFS{
		"m/010_ten.sql":  {Data: []byte("ten")},
		"m/002_two.sql":  {Data: []byte("two")},
		"m/0001_one.sql": {Data: []byte("one")},
		"m/notes.txt":    {Data: []byte("not a migration")},
	}
	ms, err := Load(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Name+"="+m.SQL)
	}
	if want := "0001_one=one 002_two=two 010_ten=ten"; strings.Join(got, " ") != want {
		t.Errorf("Load = %s, want %s", strings.Join(got, " "), want)
	}
	if Newest(ms) != 10 || Newest(nil) != 0 {
		t.Errorf("Newest = %d, %d; want 10, 0", Newest(ms), Newest(nil))
	}
}

func TestLoadRefusesBadNames(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"no number":      {"m/init.sql": {}},
		"zero":           {"m/000_init.sql": {}},
		"no underscore":  {"m/001.sql": {}},
		"shared version": {"m/001_a.sql": {}, "m/01_b.sql": {}},
	} {
		if ms, err := Load(fsys, "m"); err == nil {
			t.Errorf("%s: Load = %v, want an error", name, ms)
		}
	}
}

package probe

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/two-services.ts from the test's stream builder")

// TestTestdata keeps testdata/two-services.ts, which the example and the command's tests read,
// equal to what buildSynthetic makes, so the stream in the file is the one described there.
func TestTestdata(t *testing.T) {
	ts := buildSynthetic(3).ts
	const path = "testdata/two-services.ts"
	if *update {
		if err := os.WriteFile(path, ts, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, ts) {
		t.Errorf("%s is not the stream buildSynthetic(3) makes: run go test ./probe -run Testdata -update", path)
	}
}

package multiplex_test

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/tsdescramble/tsdescramble/multiplex"
)

func TestReadFile(t *testing.T) {
	f, err := os.Open("testdata/four.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := multiplex.Read(f)
	if err != nil {
		t.Fatal(err)
	}
	want := []multiplex.Service{
		{Number: 101, Keys: "biss:112233445566", Output: "one.ts", Line: 5},
		{Number: 102, Keys: "cs378x://user:secret@127.0.0.1:15000", Output: "udp://239.1.1.2:5000", Line: 8},
		{Name: "News 24", Keys: "cw-file:news.txt", Output: "news.ts", Line: 11},
		{Number: 0x68, Output: "four.ts", Line: 14},
	}
	if c.Input != "mux.ts" || c.MissingKey != "pass" || !reflect.DeepEqual(c.Services, want) {
		t.Errorf("read %+v, want input mux.ts, missing-key pass and services %+v", c, want)
	}
}

func TestReadJSON(t *testing.T) {
	c, err := multiplex.Read(strings.NewReader(`{"services": [{"service": 7, "keys": "cw:1122334455667788", "output": "seven.ts"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Services) != 1 || c.Services[0].Number != 7 || c.Services[0].Output != "seven.ts" {
		t.Errorf("read %+v", c)
	}
}

func TestReadErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"unknown-field", "services:\n  - service: 1\n    output: a.ts\n    ouput: b.ts\n", "line 4: field ouput not found"},
		{"unknown-top", "inputs: a.ts\nservices:\n  - service: 1\n    output: a.ts\n", "line 1: field inputs not found"},
		{"number-too-big", "services:\n  - service: 70000\n    output: a.ts\n", "line 2"},
		{"number-text", "services:\n  - service: one\n    output: a.ts\n", "line 2"},
		{"no-services", "input: a.ts\n", "line 1: no services"},
		{"empty", "", "empty"},
		{"no-output", "services:\n  - service: 1\n", "line 2: service 1 has no output"},
		{"no-number", "services:\n  - output: a.ts\n", "line 2: a service without"},
		{"both", "services:\n  - service: 1\n    name: X\n    output: a.ts\n", "line 2: service 1 has a name too"},
		{"twice", "services:\n  - service: 1\n    output: a.ts\n  - service: 1\n    output: b.ts\n", "line 4: service 1 is given twice (line 2 too)"},
		{"name-twice", "services:\n  - name: X\n    output: a.ts\n  - name: X\n    output: b.ts\n", `line 4: service "X" is given twice`},
		{"output-twice", "services:\n  - service: 1\n    output: a.ts\n  - service: 2\n    output: a.ts\n", "line 4: service 2 goes to the output of line 2 too"},
		{"missing-key", "missing-key: keep\nservices:\n  - service: 1\n    output: a.ts\n", "missing-key: want pass or drop"},
		{"not-yaml", "services: [\n", "line"},
		{"too-large", "#" + strings.Repeat("x", 1<<20) + "\n", "over 1 MiB"},
	} {
		t.Run("case="+tc.name, func(t *testing.T) {
			_, err := multiplex.Read(strings.NewReader(tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || !strings.HasPrefix(err.Error(), "multiplex: ") {
				t.Errorf("error %q, want one line starting multiplex: with %q", err, tc.want)
			}
		})
	}
}

// roundTrip checks that what Write writes of c reads back as c.
func roundTrip(t *testing.T, c *multiplex.Config) {
	t.Helper()
	var b bytes.Buffer
	if err := c.Write(&b); err != nil {
		t.Fatal(err)
	}
	back, err := multiplex.Read(&b)
	if err != nil {
		t.Fatalf("reading back what Write wrote: %v\n%s", err, b.String())
	}
	for i := range back.Services {
		back.Services[i].Line, back.Services[i].Comment = c.Services[i].Line, c.Services[i].Comment
	}
	if !reflect.DeepEqual(back, c) {
		t.Errorf("read back %+v, wrote %+v", back, c)
	}
}

func TestWriteReadsBack(t *testing.T) {
	f, err := os.ReadFile("testdata/four.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := multiplex.Read(bytes.NewReader(f))
	if err != nil {
		t.Fatal(err)
	}
	c.Services[0].Comment = "svc1: Conax\nECM PID 0x0100"
	roundTrip(t, c)
	var b bytes.Buffer
	if err := c.Write(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "  # svc1: Conax\n  # ECM PID 0x0100\n  - service: 101\n") {
		t.Errorf("the comment is not above its service:\n%s", b.String())
	}
}

// FuzzRead holds Read to its contract on any input: no panic, and a config it accepts is
// written and read back the same.
func FuzzRead(f *testing.F) {
	seed, err := os.ReadFile("testdata/four.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"services": [{"service": 7, "output": "a"}]}`))
	f.Add([]byte("services:\n  - name: \"\\u00e9\"\n    output: x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := multiplex.Read(bytes.NewReader(data))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error of more than one line: %q", err)
			}
			return
		}
		roundTrip(t, c)
	})
}

package multiplex_test

import (
	"fmt"
	"strings"

	"github.com/tsdescramble/tsdescramble/multiplex"
)

func ExampleRead() {
	c, err := multiplex.Read(strings.NewReader(`
services:
  - service: 101
    keys: biss:112233445566
    output: one.ts
  - name: News 24
    output: news.ts
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range c.Services {
		fmt.Printf("%s (line %d) -> %s\n", s.Label(), s.Line, s.Output)
	}
	_, err = multiplex.Read(strings.NewReader("services:\n  - service: 1\n    ouptut: a.ts\n"))
	fmt.Println(err)
	// Output:
	// service 101 (line 3) -> one.ts
	// service "News 24" (line 6) -> news.ts
	// multiplex: line 3: field ouptut not found in type multiplex.Service
}

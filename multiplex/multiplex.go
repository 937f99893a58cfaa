package multiplex

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Config is a run over a whole multiplex.
type Config struct {
	// Input is the stream to read, as the command's -in takes it; empty: the command line's.
	Input string `yaml:"input,omitempty" json:"input,omitempty"`
	// MissingKey is what becomes of the scrambled packets of a service without keys, and of a
	// crypto period whose key did not come: "pass" (as they came) or "drop"; empty: pass.
	MissingKey string `yaml:"missing-key,omitempty" json:"missing-key,omitempty"`
	// Services are the services to write, in the order given.
	Services []Service `yaml:"services" json:"services"`
}

// Service is one service of the multiplex: which one, its keys and its output.
type Service struct {
	// Number is the program_number of the PAT (the DVB service_id); 0 when Name names it.
	Number uint16 `yaml:"service,omitempty" json:"service,omitempty"`
	// Name is the service_name of the SDT, for a service given by name.
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	// Keys is the service's key source, written as the command's -keys takes it after the
	// "SERVICE=" (biss:HEX, cw:HEX, cw-file:PATH, cs378x://...); empty: none.
	Keys string `yaml:"keys,omitempty" json:"keys,omitempty"`
	// Output is where the service's single-program stream goes, as -out takes it.
	Output string `yaml:"output" json:"output"`
	// Line is the line of the file that begins the service, for messages; 0 when not read.
	Line int `yaml:"-" json:"-"`
	// Comment, when set, is written as a comment above the service by Write (what a probe
	// found of it: its name, its CA systems); Read leaves it empty.
	Comment string `yaml:"-" json:"-"`
}

// Label names the service in messages: "service 101", or `service "News 24"` for one given
// by name.
func (s *Service) Label() string {
	if s.Number == 0 {
		return fmt.Sprintf("service %q", s.Name)
	}
	return fmt.Sprintf("service %d", s.Number)
}

// maxSize bounds the file read: a config of hundreds of services is tens of kilobytes.
const maxSize = 1 << 20

// ErrTooLarge is returned for a file over a megabyte: surely not a config.
var ErrTooLarge = errors.New("multiplex: the config is over 1 MiB: not a config file")

// Read reads a config from r and checks it: every field known and of its type, at least one
// service, each named by a number from 1 to 65535 or by a name (not both), each number, name
// and output at most once, each with an output, and missing-key pass or drop. An error names
// the line it found wrong.
func Read(r io.Reader) (*Config, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSize {
		return nil, ErrTooLarge
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, oneLine(err)
	}
	if len(doc.Content) == 0 {
		return nil, errors.New("multiplex: the config is empty: it needs a services list")
	}
	root := doc.Content[0]
	var c Config
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		return nil, oneLine(err)
	}
	lines := serviceLines(root)
	for i := range c.Services {
		if i < len(lines) {
			c.Services[i].Line = lines[i]
		}
	}
	if err := c.check(root.Line); err != nil {
		return nil, err
	}
	return &c, nil
}

// serviceLines returns the line of each item of the services list.
func serviceLines(root *yaml.Node) []int {
	if root.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "services" && root.Content[i+1].Kind == yaml.SequenceNode {
			var lines []int
			for _, n := range root.Content[i+1].Content {
				lines = append(lines, n.Line)
			}
			return lines
		}
	}
	return nil
}

// oneLine makes the decoder's error one line starting with the package name: a TypeError lists
// one problem a line.
func oneLine(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msg = strings.Join(te.Errors, "; ")
	}
	// A value quoted in the message may hold a line break of the file.
	return fmt.Errorf("multiplex: %s", strings.ReplaceAll(msg, "\n", `\n`))
}

func (c *Config) check(line int) error {
	if len(c.Services) == 0 {
		return fmt.Errorf("multiplex: line %d: no services: list them under services:, each with service: NUMBER (or name: NAME) and output: DEST", line)
	}
	switch c.MissingKey {
	case "", "pass", "drop":
	default:
		return fmt.Errorf("multiplex: missing-key: want pass or drop, not %q", c.MissingKey)
	}
	numbers := map[uint16]int{}
	names := map[string]int{}
	outputs := map[string]int{}
	for i := range c.Services {
		s := &c.Services[i]
		switch {
		case s.Number == 0 && s.Name == "":
			return fmt.Errorf("multiplex: line %d: a service without service: NUMBER (1 to 65535) or name: NAME", s.Line)
		case s.Number != 0 && s.Name != "":
			return fmt.Errorf("multiplex: line %d: service %d has a name too: give service: or name:, not both", s.Line, s.Number)
		case s.Output == "":
			return fmt.Errorf("multiplex: line %d: %s has no output: give output: FILE or an address", s.Line, s.Label())
		}
		if s.Number != 0 {
			if l, ok := numbers[s.Number]; ok {
				return fmt.Errorf("multiplex: line %d: service %d is given twice (line %d too)", s.Line, s.Number, l)
			}
			numbers[s.Number] = s.Line
		} else {
			if l, ok := names[s.Name]; ok {
				return fmt.Errorf("multiplex: line %d: service %q is given twice (line %d too)", s.Line, s.Name, l)
			}
			names[s.Name] = s.Line
		}
		if l, ok := outputs[s.Output]; ok && s.Output != "/dev/null" {
			return fmt.Errorf("multiplex: line %d: %s goes to the output of line %d too: one output per service", s.Line, s.Label(), l)
		}
		outputs[s.Output] = s.Line
	}
	return nil
}

// Write writes c as YAML that Read reads back the same, each service's Comment above it.
func (c *Config) Write(w io.Writer) error {
	var doc yaml.Node
	if err := doc.Encode(c); err != nil {
		return err
	}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value != "services" {
			continue
		}
		for j, n := range doc.Content[i+1].Content {
			if j < len(c.Services) && c.Services[j].Comment != "" {
				n.HeadComment = c.Services[j].Comment
			}
		}
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	return enc.Close()
}

package psi

import (
	"reflect"
	"testing"
)

func TestParsePIDList(t *testing.T) {
	tests := []struct {
		in   string
		want []uint16
	}{
		{"256", []uint16{256}},
		{"0x100", []uint16{0x100}},
		{"0X1fFf", []uint16{0x1FFF}},
		{"0", []uint16{0}},
		{"0100", []uint16{100}}, // a leading zero is not octal
		{" 0x101 , 0x100,256 ", []uint16{0x100, 0x101}},
		{"0x100-0x103", []uint16{0x100, 0x101, 0x102, 0x103}},
		{"0x100 - 0x101,0x200", []uint16{0x100, 0x101, 0x200}},
		{"8190-8191", []uint16{8190, 8191}},
		{"5-5", []uint16{5}},
		{"0x10-0x11,0x11-0x12", []uint16{0x10, 0x11, 0x12}},
	}
	for _, tc := range tests {
		got, err := ParsePIDList(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParsePIDList(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	errs := []struct{ in, msg string }{
		{"", "no PID given: want PIDs such as 0x100,0x101 or 0x100-0x10f"},
		{"  ", "no PID given: want PIDs such as 0x100,0x101 or 0x100-0x10f"},
		{"0x100,", `empty item in PID list "0x100,"`},
		{",0x100", `empty item in PID list ",0x100"`},
		{"0x2000", `PID "0x2000" is out of range: PIDs go from 0 to 0x1FFF (8191)`},
		{"8192", `PID "8192" is out of range: PIDs go from 0 to 0x1FFF (8191)`},
		{"99999999999999999999999", `PID "99999999999999999999999" is out of range: PIDs go from 0 to 0x1FFF (8191)`},
		{"0x1000-0x2000", `PID "0x2000" is out of range: PIDs go from 0 to 0x1FFF (8191)`},
		{"0x10f-0x100", `PID range "0x10f-0x100" ends before it starts`},
		{"-5", `PID "-5": want a number, decimal or hex with 0x (such as 256 or 0x100)`},
		{"+5", `PID "+5": want a number, decimal or hex with 0x (such as 256 or 0x100)`},
		{"0x", `PID "0x": want a number, decimal or hex with 0x (such as 256 or 0x100)`},
		{"0x1_0", `PID "0x1_0": want a number, decimal or hex with 0x (such as 256 or 0x100)`},
		{"video", `PID "video": want a number, decimal or hex with 0x (such as 256 or 0x100)`},
		{"1-", `PID "": want a number, decimal or hex with 0x (such as 256 or 0x100)`},
		{"1-2-3", `PID "2-3": want a number, decimal or hex with 0x (such as 256 or 0x100)`},
		{"0x100;0x101", `PID "0x100;0x101": want a number, decimal or hex with 0x (such as 256 or 0x100)`},
	}
	for _, tc := range errs {
		if got, err := ParsePIDList(tc.in); err == nil || err.Error() != tc.msg {
			t.Errorf("ParsePIDList(%q) = %v, %v; want %q", tc.in, got, err, tc.msg)
		}
	}
}

func FuzzParsePIDList(f *testing.F) {
	for _, s := range []string{"0x100-0x10f,0x200", "1,2,3", "-", "0x", "8191-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		pids, err := ParsePIDList(s)
		if err != nil {
			return
		}
		for i, p := range pids {
			if p > MaxPID || i > 0 && p <= pids[i-1] {
				t.Fatalf("%q: %v", s, pids)
			}
		}
	})
}

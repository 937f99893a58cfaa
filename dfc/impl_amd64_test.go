//go:build gc && !purego

package dfc

import (
	"strings"

	"golang.org/x/sys/cpu"
)

// implNames lists the multi-block paths built for this machine type.
var implNames = []string{"avx512ifma", "avx512", "avx2", "generic"}

// setImplementation makes the multi-block methods use the named path and
// returns a function that restores the previous choice. ok is false when the
// CPU cannot run that path; nothing is changed then, and missing names the
// CPU features it lacks.
func setImplementation(name string) (restore func(), ok bool) {
	saved2, saved512, savedIFMA := useAVX2, useAVX512, useAVX512IFMA
	switch name {
	case "avx512ifma":
		if !supportsAVX512IFMA {
			return func() {}, false
		}
		useAVX512IFMA = true
	case "avx512":
		if !supportsAVX512 {
			return func() {}, false
		}
		useAVX512, useAVX512IFMA = true, false
	case "avx2":
		if !supportsAVX2 {
			return func() {}, false
		}
		useAVX2, useAVX512, useAVX512IFMA = true, false, false
	case "generic":
		useAVX2, useAVX512, useAVX512IFMA = false, false, false
	default:
		panic("unknown implementation " + name)
	}
	return func() { useAVX2, useAVX512, useAVX512IFMA = saved2, saved512, savedIFMA }, true
}

// missingFeatures names the CPU features the named path needs and this CPU
// lacks, for the message of a skipped test.
func missingFeatures(name string) string {
	var need map[string]bool
	switch name {
	case "avx512ifma":
		need = map[string]bool{"AVX512F": cpu.X86.HasAVX512F, "AVX512DQ": cpu.X86.HasAVX512DQ, "AVX512BW": cpu.X86.HasAVX512BW, "AVX512IFMA": cpu.X86.HasAVX512IFMA}
	case "avx512":
		need = map[string]bool{"AVX512F": cpu.X86.HasAVX512F, "AVX512DQ": cpu.X86.HasAVX512DQ, "AVX512BW": cpu.X86.HasAVX512BW}
	case "avx2":
		need = map[string]bool{"AVX2": cpu.X86.HasAVX2, "BMI1": cpu.X86.HasBMI1, "BMI2": cpu.X86.HasBMI2}
	}
	var missing []string
	for _, f := range []string{"AVX512F", "AVX512DQ", "AVX512BW", "AVX512IFMA", "AVX2", "BMI1", "BMI2"} {
		if has, ok := need[f]; ok && !has {
			missing = append(missing, f)
		}
	}
	return strings.Join(missing, ", ")
}

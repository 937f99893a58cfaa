package csa

// fake512 is a kernel of a width no real kernel has: 512 lanes, run by the
// portable 64-lane Go kernel eight stream passes at a time. It is what
// adding a width takes: one registration, with no other edit to the
// engine, NewEngine, Available or String. It is defined in every build and
// registered only by the tests (listed in testKernels, it joins every
// engine test beside the registered kernels) and in builds with the
// csafake tag (kernel_fake.go), where the packages above csa show that they
// take a new width with no edit of their own.
var fake512 = &kernel{id: "fake512", name: "fake", lanes: 512, word: 64, newFuncs: newGoKernel[uint64]}

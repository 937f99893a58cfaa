package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/internal/synth"
	"github.com/tsdescramble/tsdescramble/internal/units"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/pipeline"
	"github.com/tsdescramble/tsdescramble/ts"
)

func benchCommand(env Env) *cli.Command {
	prof := &config{}
	return &cli.Command{
		Name:      "bench",
		Usage:     "measure each bitslice group width on this machine and suggest flags",
		UsageText: "tsdescramble bench [flags]",
		Description: `Descrambles a synthetic stream held in memory (no disk I/O) with every group width this
CPU supports, on one worker and on every CPU, then tries batch sizes for the fastest, and prints
the throughput in MB/s of TS input and the flags that gave the best one. Example:
   tsdescramble bench -packets 100000`,
		Flags: append([]cli.Flag{
			&cli.IntFlag{Name: "packets", Value: 50000, Usage: "`N` packets in the synthetic stream"},
			&cli.IntFlag{Name: "rounds", Value: 3, Usage: "`N` runs of each configuration; the best counts"},
		}, profileFlags(&prof.profile)...),
		Action: func(c *cli.Context) error { return profiled(prof, func() error { return bench(c, env) }) },
	}
}

type benchConfig struct {
	lanes, workers, batch int
}

func bench(c *cli.Context, env Env) error {
	if c.NArg() > 0 {
		return usageErr("bench takes no arguments: tsdescramble bench [-packets N] [-rounds N]")
	}
	n, rounds := c.Int("packets"), c.Int("rounds")
	if n < 1000 || n > 10_000_000 {
		return usageErr("-packets: want 1000 to 10000000")
	}
	if rounds < 1 || rounds > 100 {
		return usageErr("-rounds: want 1 to 100")
	}
	cw := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	key, _ := csa.NewKey(cw)
	block, size := benchStream(n, key)
	// The results are what was asked for: stdout.
	w := env.Stdout
	measure := func(cfg benchConfig) (float64, error) {
		best := 0.0
		for range rounds {
			start := time.Now()
			src := ts.NewSource(&repeatReader{block: block, n: size})
			_, err := pipeline.Run(context.Background(), src, io.Discard, pipeline.Options{
				Keys: keys.NewFixed(cw, cw), Lanes: cfg.lanes, Workers: cfg.workers, Batch: cfg.batch,
			})
			src.Close()
			if err != nil {
				return 0, err
			}
			best = max(best, float64(size)/time.Since(start).Seconds()/1e6)
		}
		return best, nil
	}
	fmt.Fprintf(w, "tsdescramble bench: %d packets (%s, made from %s in memory), best of %d runs, %d CPUs\n",
		n, units.Bytes(size, 1), units.Bytes(int64(len(block)), 1), rounds, runtime.NumCPU())
	fmt.Fprintf(w, "%-34s %8s %8s %12s\n", "engine", "workers", "batch", "MB/s")
	var choices []string // what the engines chose for this CPU, said once after the table
	var bestCfg benchConfig
	bestSpeed := 0.0
	try := func(cfg benchConfig) error {
		speed, err := measure(cfg)
		if err != nil {
			return failErr("bench: %v", err)
		}
		e, _ := csa.NewEngine(cfg.lanes)
		fmt.Fprintf(w, "%-34s %8d %8d %12.1f\n", e, cfg.workers, cfg.batch, speed)
		if c := e.Choice(); c != "" && !slices.Contains(choices, c) {
			choices = append(choices, c)
		}
		if speed > bestSpeed {
			bestSpeed, bestCfg = speed, cfg
		}
		return nil
	}
	workerCounts := []int{1}
	if p := runtime.GOMAXPROCS(0); p > 1 {
		workerCounts = append(workerCounts, p)
	}
	for _, lanes := range csa.Available() {
		for _, workers := range workerCounts {
			if err := try(benchConfig{lanes, workers, pipeline.DefaultBatch}); err != nil {
				return err
			}
		}
	}
	for _, batch := range []int{256, 4096} {
		if err := try(benchConfig{bestCfg.lanes, bestCfg.workers, batch}); err != nil {
			return err
		}
	}
	for _, c := range choices {
		fmt.Fprintf(w, "chosen for this CPU: %s\n", c)
	}
	fmt.Fprintf(w, "fastest: %.1f MB/s (%.0f Mbit/s) with -group %d -workers %d -batch %d\n",
		bestSpeed, bestSpeed*8, bestCfg.lanes, bestCfg.workers, bestCfg.batch)
	return nil
}

// benchBlock is the most packets of synthetic stream the bench holds in memory (9.4 MB).
const benchBlock = 50000

// benchStream returns the block of synthetic stream a bench of n packets repeats, and the size
// of the stream: 10^7 packets held in memory would take 1.9 GB. The block holds whole pairs of
// crypto periods, so the parity alternates across repeats.
func benchStream(n int, key *csa.Key) (block []byte, size int64) {
	return synth.SyntheticStream(min(n, benchBlock), 5000, key), int64(n) * 188
}

// repeatReader reads n bytes of block repeated.
type repeatReader struct {
	block []byte
	n     int64 // bytes still to read
	at    int   // position in block
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	m := copy(p[:min(int64(len(p)), r.n)], r.block[r.at:])
	r.at = (r.at + m) % len(r.block)
	r.n -= int64(m)
	return m, nil
}

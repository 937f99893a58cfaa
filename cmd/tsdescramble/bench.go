package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
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
the throughput in MB/s of TS input and the flags that gave the best one; then the fastest engine
alone, in Mbit/s as libdvbcsa's test/benchbitslice reports them. Example:
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
	dec, enc, e := engineAlone(n, rounds)
	fmt.Fprintf(w, "engine alone, as libdvbcsa's test/benchbitslice counts (%s, one CPU, a batch of %d payloads of 100-184 bytes counted as 184): decrypt %.0f Mbit/s, encrypt %.0f Mbit/s\n",
		e, e.Lanes(), dec, enc)
	fmt.Fprintf(w, "fastest: %.1f MB/s (%.0f Mbit/s) with -group %d -workers %d -batch %d\n",
		bestSpeed, bestSpeed*8, bestCfg.lanes, bestCfg.workers, bestCfg.batch)
	return nil
}

// engineAlone measures the default engine without the pipeline, the way libdvbcsa's
// test/benchbitslice measures its bitslice batch: one batch of Lanes payloads of 100 to 184
// bytes (lengths drawn once), deciphered in place again and again on one goroutine, then
// enciphered, each payload counted as 184 bytes; so that an ARM or x86 user can set the line
// beside that program's output on the same machine. It runs n payloads per direction and
// keeps the best of rounds.
func engineAlone(n, rounds int) (decrypt, encrypt float64, e *csa.Engine) {
	e, _ = csa.NewEngine(0)
	key, _ := csa.NewKey([]byte{0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a, 0x5a}) // benchbitslice's CW
	rng := rand.New(rand.NewPCG(1, 2))
	batch := make([][]byte, e.Lanes())
	for i := range batch {
		batch[i] = bytes.Repeat([]byte{byte(rng.Uint32())}, 100+rng.IntN(85))
	}
	calls := max(1, n/len(batch))
	measure := func(run func(*csa.Key, [][]byte)) float64 {
		best := 0.0
		for range rounds {
			start := time.Now()
			for range calls {
				run(key, batch)
			}
			best = max(best, float64(calls*len(batch)*184*8)/time.Since(start).Seconds()/1e6)
		}
		return best
	}
	return measure(e.Decrypt), measure(e.Encrypt), e
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

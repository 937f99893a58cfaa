package main

import (
	"bytes"
	"context"
	"fmt"
	"github.com/tsdescramble/tsdescramble/internal/synth"
	"io"
	"runtime"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tsdescramble/tsdescramble/csa"
	"github.com/tsdescramble/tsdescramble/keys"
	"github.com/tsdescramble/tsdescramble/pipeline"
)

func benchCommand(env Env) *cli.Command {
	return &cli.Command{
		Name:  "bench",
		Usage: "measure each bitslice group width on this machine and suggest flags",
		Description: `Descrambles a synthetic stream held in memory (no disk I/O) with every group width this
CPU supports, on one worker and on every CPU, then tries batch sizes for the fastest, and prints
the throughput in MB/s of TS input and the flags that gave the best one. Example:
   tsdescramble bench -packets 100000`,
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "packets", Value: 50000, Usage: "packets in the synthetic stream"},
			&cli.IntFlag{Name: "rounds", Value: 3, Usage: "runs of each configuration; the best counts"},
		},
		Action: func(c *cli.Context) error { return bench(c, env) },
	}
}

type benchConfig struct {
	lanes, workers, batch int
}

func bench(c *cli.Context, env Env) error {
	n, rounds := c.Int("packets"), c.Int("rounds")
	if n < 1000 || n > 10_000_000 {
		return usageErr("-packets %d: want 1000 to 10000000", n)
	}
	if rounds < 1 || rounds > 100 {
		return usageErr("-rounds %d: want 1 to 100", rounds)
	}
	cw := []byte{0x11, 0x22, 0x33, 0x66, 0x44, 0x55, 0x66, 0xff}
	key, _ := csa.NewKey(cw)
	ts := synth.SyntheticStream(n, 5000, key)
	w := env.Stderr
	measure := func(cfg benchConfig) (float64, error) {
		best := 0.0
		for range rounds {
			start := time.Now()
			_, err := pipeline.Run(context.Background(), bytes.NewReader(ts), io.Discard, pipeline.Options{
				Keys: keys.NewFixed(cw, cw), Lanes: cfg.lanes, Workers: cfg.workers, Batch: cfg.batch,
			})
			if err != nil {
				return 0, err
			}
			best = max(best, float64(len(ts))/time.Since(start).Seconds()/1e6)
		}
		return best, nil
	}
	fmt.Fprintf(w, "tsdescramble bench: %d packets (%s) in memory, best of %d runs, %d CPUs\n",
		n, sizeString(int64(len(ts))), rounds, runtime.NumCPU())
	fmt.Fprintf(w, "%-34s %8s %8s %12s\n", "engine", "workers", "batch", "MB/s")
	var bestCfg benchConfig
	bestSpeed := 0.0
	try := func(cfg benchConfig) error {
		speed, err := measure(cfg)
		if err != nil {
			return failErr("bench: %v", err)
		}
		e, _ := csa.NewEngine(cfg.lanes)
		fmt.Fprintf(w, "%-34s %8d %8d %12.1f\n", e, cfg.workers, cfg.batch, speed)
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
	fmt.Fprintf(w, "fastest: %.1f MB/s (%.0f Mbit/s) with -group %d -workers %d -batch %d\n",
		bestSpeed, bestSpeed*8, bestCfg.lanes, bestCfg.workers, bestCfg.batch)
	return nil
}

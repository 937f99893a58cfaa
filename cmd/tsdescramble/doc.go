// Command tsdescramble descrambles MPEG transport streams scrambled with DVB-CSA2 (or with
// DVB-CISSA, ATIS-IDSA, DFC or Serpent), scrambles them, and tells what is in them.
//
//	tsdescramble -in scrambled.ts -out clear.ts -cw 11223366445566ff
//	cat scrambled.ts | tsdescramble -cw-file keys.txt > clear.ts
//
// Without a subcommand it descrambles. It reads 188, 192 and 204-byte packets from a file or
// stdin, regains sync after garbage, descrambles the payloads of packets with TSC 10 (even key)
// and 11 (odd key), clears their scrambling bits and writes every packet, in order and in its
// framing, to a file or stdout. The keys come from -cw, -cw-even and -cw-odd, -biss, -cw-env or
// -cw-file (a CW list, EVEN ODD pairs or an OSCam .cwl log), or while the stream runs from a
// key server that answers its ECMs (-key-server cs378x://USER:PASS@HOST:PORT,
// newcamd://USER:PASS@HOST:PORT?key=28HEXDIGITS or dvbapi://HOST:PORT, -key-server-env NAME,
// -key-wait), or from a CW log that grows (-cw-file FILE -follow). With a key server,
// -ecm-cache FILE appends each ECM it answers and its CWs to an ECM cache; without one,
// -ecm-cache FILE descrambles a recording that carries those ECMs from the cache, at the speed
// of the file, an ECM not in it having no key. Each PID follows its own crypto periods, and a
// period no key fits is left as it came. -keys SERVICE=SOURCE (repeatable) and -config FILE
// (YAML or JSON) give each service of a multiplex a key source and an output of its own
// (-out-service): the input is split, and each service with keys descrambled by itself;
// SIGHUP makes a -config run reread its file and apply what changed, the other services going
// on without losing a packet. Messages go to stderr, one line each;
// stdout carries TS data when it is the output, else only what was asked for (help, -version,
// bench results, probe reports).
//
// # Subcommands
//
//	tsdescramble scramble [flags]   the reverse: scrambles every elementary stream (or those of
//	                                -pid or -service) with the same key flags; -cp-packets N
//	                                sets the crypto period
//	tsdescramble probe PATH         what is in a stream: services, PIDs and stream types, CA
//	                                systems, scrambling per PID; -json for scripts; -config
//	                                for the config that splits it, one output per service
//	tsdescramble bench [flags]      measures each bitslice width on this machine and suggests
//	                                -group, -workers and -batch
//	tsdescramble batch -manifest F  runs the jobs of a JSON Lines manifest, one object of flags
//	                                per line: all of them, -jobs at a time, or the one -index
//	                                (or JOB_COMPLETION_INDEX) names; -stats-dir DIR keeps each
//	                                job's statistics and skips the jobs they say are done
//
// "tsdescramble help [SUBCOMMAND]", "tsdescramble -h" and "tsdescramble SUBCOMMAND -h" list the
// flags.
//
// # Exit status
//
//	0      success; also when a PID no key fits (another CA system's) is left scrambled,
//	       as long as another PID fits
//	1      runtime failure: I/O, an input with no transport stream in it, a -service or -pid
//	       the stream does not have; with -ecmg, an ECMG that cannot be used, or a stream
//	       that went out without its first ECM (-ecm-wait)
//	2      usage error: a bad flag, a bad key, an unreadable key file, an output that names
//	       an input
//	3      the keys do not fit the stream: crypto periods, or every PID, were left scrambled
//	       (with a key server or an ECM cache: got no key from it), or no scrambled unit
//	       start descrambled to a valid header; or the key changed where the stream showed
//	       no change (packets lost that the continuity counters did not show, two streams
//	       joined), so that packets before the next unit start went out wrong. The output is
//	       written all
//	       the same; when one of the usual mistakes (even and odd swapped, -reduce-entropy on
//	       or off, a CW's bytes reversed) would make the keys fit, the message says which.
//	       With -keys or -config, each service is judged alone and the run takes the worst
//	       status of its services (1 before 3); the message names each service that failed
//	4      batch only: a job's own values are wrong (a key file or an input that is not there,
//	       a bad CW, an index past the manifest's end) while the manifest is right; that job
//	       alone fails, and its statistics (-stats-dir) say why
//
//	128+N  stopped by signal N, after writing every packet already processed: 129 for SIGHUP
//	       (a -config run rereads its config on SIGHUP instead), 130 for SIGINT, 143 for
//	       SIGTERM; a second signal, SIGQUIT (131), or a stop that the output holds up for
//	       2 s ends the run at once; 141 for SIGPIPE, quietly, when the reader of stdout
//	       goes away, as for any Unix filter
//
// A batch with -index (or JOB_COMPLETION_INDEX) exits with its job's status; a batch of every
// job checks the values of all jobs before the first runs, names each job it refuses, runs the
// others, and exits 0 when each succeeded or was skipped, else 1 if a job failed with 1 (a
// retry may mend it; finished jobs are skipped), else 4, else 3. A manifest that is wrong for
// every job (a line that is not an object of known flags, jobs that write each other's files)
// is 2 before any job runs. A scheduler retries 1 and never 2, 3 or 4: see the README's
// "Running at scale".
package main

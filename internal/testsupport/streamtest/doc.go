// Package streamtest checks tsdescramble on whole streams: clear streams made with ffmpeg,
// scrambled by libdvbcsa (an independent DVB-CSA2 implementation) with CW lists and several
// crypto periods, in every framing, must come out byte-identical through files and pipes.
// It holds tests only, built with the dvbcsa tag: they need ffmpeg and libdvbcsa-dev, which
// .ci/run installs.
package streamtest

# OSCam cardserver - http://www.streamboard.tv/oscam/
# control word log file for use with tsdec offline decrypter
# DATE 2026-11-29, TIME 12:00:00, TZ UTC
# CAID 0x2600, SID 0x0001, SERVICE "tsdescramble demo"
0 11 22 33 66 44 55 66 FF # 12:00:00
1 01 02 03 06 08 09 0A 1B # 12:00:03
0 A1 B2 C3 16 D4 E5 F6 AF # 12:00:07
1 11 22 33 66 44 55 66 FF # 12:00:10
0 01 02 03 06 08 09 0A 1B # 12:00:13
1 A1 B2 C3 16 D4 E5 F6 AF # 12:00:17

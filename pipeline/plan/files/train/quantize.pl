# Rounds the arc counters of GCC .gcda files to BITS significant bits, in place, so that two
# training runs whose counts differ a little (the kernel splits reads and writes differently,
# random numbers change a few loop counts in the cryptography) give the same profile, hence
# the same binary. Usage: perl quantize.pl BITS FILE...
# Format (GCC 12 and later): a 16-byte header, then records of tag (u32), length in bytes
# (s32; negative: that many bytes of zero counters, no body) and body; counters are 64-bit,
# little-endian on the platforms we build. Arc counters (tag 0x01a10000) and the object
# summary's sum_max (tag 0xa1000000) are rounded down; the other counters (value profiles,
# the time profiler) are set to zero: the optimized build does not read them
# (-fno-profile-values, -fno-profile-reorder-functions), and two runs give equal files.
use strict; use warnings;
my $bits = shift @ARGV;
sub qz { my $c = shift; return $c if $c < (1 << $bits); my $m = 0; my $t = $c; while ($t >>= 1) { $m++ } my $drop = $m + 1 - $bits; return ($c >> $drop) << $drop; }
for my $f (@ARGV) {
  open(my $in, '<:raw', $f) or die "$f: $!"; local $/; my $d = <$in>; close $in;
  my $out = substr($d, 0, 16); my $pos = 16;
  while ($pos + 8 <= length $d) {
    my ($tag, $len) = unpack('V l<', substr($d, $pos, 8));
    $out .= substr($d, $pos, 8); $pos += 8;
    next if $len <= 0;
    my $body = substr($d, $pos, $len); $pos += $len;
    if ($tag == 0x01a10000) { $body = pack('Q<*', map { qz($_) } unpack('Q<*', $body)) }
    elsif (($tag & 0xff010000) == 0x01010000) { $body = "\0" x $len }
    elsif ($tag == 0xa1000000) { my ($runs, $max) = unpack('V V', $body); $body = pack('V V', $runs, qz($max)) }
    $out .= $body;
  }
  $out .= substr($d, $pos);
  open(my $o, '>:raw', $f) or die "$f: $!"; print $o $out; close $o;
}

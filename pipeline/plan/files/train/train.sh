# The PGO training run (sourced by the pgo-train stage, in the nginx source directory, after
# the instrumented nginx is built). Loopback only, one connection at a time, fixed request
# counts, fixed content and keys, every client call bounded in time; the profile counters
# go to $GCOV_PREFIX (see the stage script). The client is the builder's curl: its own
# libraries are not instrumented, so only the server is profiled.
T="$WORK/train"
mkdir -p "$T/html" "$T/logs" "$T/tmp"
cp "$WORK/files/train/nginx.conf" "$WORK/files/train/"*.crt "$WORK/files/train/"*.key "$T/"
cp "$WORK/files/index.html" "$T/html/index.html"
# Fixed content: ~100 KB of JSON and of HTML (compressible, gzip on the fly) and 1 MiB of
# pseudo-random bytes (a fixed linear congruential sequence: bulk TLS).
perl -e 'print "["; for my $i (0..1199) { print "," if $i; printf q({"id":%d,"name":"item-%d","tags":["a","b","c"],"price":%d.%02d,"ok":%s}), $i, $i, $i*7%1000, $i%100, ($i%3 ? "true" : "false") } print "]\n"' > "$T/html/data.json"
perl -e 'print "<!DOCTYPE html><html><body>\n"; for my $i (0..1499) { print "<p class=\"row\">Row $i: the quick brown fox jumps over the lazy dog.</p>\n" } print "</body></html>\n"' > "$T/html/page.html"
perl -e '$x = 12345; for (1..262144) { $x = ($x * 1103515245 + 12345) % 2147483648; print pack("N", $x) }' > "$T/html/large.bin"

objs/nginx -p "$T/" -c "$T/nginx.conf" &
NGINX_PID=$!
for i in $(seq 1 100); do
  curl -sf -o /dev/null --max-time 2 http://127.0.0.1:47180/index.html && break
  kill -0 "$NGINX_PID" || { cat "$T/logs/error.log"; exit 1; }
  sleep 0.1
done

c() { curl -sfk --max-time 120 "$@" > /dev/null; }
H=http://127.0.0.1:47180 E=https://127.0.0.1:47181 R=https://127.0.0.1:47182
# Plain HTTP/1.1 keep-alive: a small page and the gzip on the fly of JSON and HTML.
c "$H/index.html?[1-400]"
c --compressed "$H/data.json?[1-100]" "$H/page.html?[1-100]"
# Full handshakes (a new connection, no session reuse): TLS 1.3 and 1.2, ECDSA and RSA.
for u in "$E" "$R"; do
  c --no-sessionid --tlsv1.3 -H 'Connection: close' "$u/index.html?[1-150]"
  c --no-sessionid --tlsv1.2 --tls-max 1.2 -H 'Connection: close' "$u/index.html?[1-150]"
  # Resumption: a new connection per request, resuming the session (the server's cache).
  c --tlsv1.3 -H 'Connection: close' "$u/index.html?[1-100]"
  c --tlsv1.2 --tls-max 1.2 -H 'Connection: close' "$u/index.html?[1-100]"
done
# TLS keep-alive over HTTP/1.1 and HTTP/2, gzip over both, and a large file.
c --http1.1 "$E/index.html?[1-400]"
c --http2 "$E/index.html?[1-400]"
c --http1.1 --compressed "$E/data.json?[1-100]"
c --http2 --compressed "$E/data.json?[1-100]" "$E/page.html?[1-100]"
c --http1.1 "$E/large.bin?[1-8]"
c --http2 "$E/large.bin?[1-8]"

# A graceful stop: the process exits normally, which writes the profile.
kill -QUIT "$NGINX_PID"
for i in $(seq 1 300); do kill -0 "$NGINX_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$NGINX_PID" 2>/dev/null; then kill -KILL "$NGINX_PID"; echo "training nginx did not stop" >&2; exit 1; fi
wait "$NGINX_PID" || true

# Sourced by the CLI test scripts: compare A B [TOL] prints the largest difference between two
# Matrix Market vectors relative to the largest |B| and fails (status 1) above TOL (default
# 1e-8) or when their lengths differ.
compare() {
  awk -v tol="${3:-1e-8}" 'FNR == 1 { f++ } /^%/ || NF != 1 { next }
       f == 1 { a[n1++] = $1 } f == 2 { b[n2++] = $1 }
       END { if (n1 != n2 || n1 == 0) { print "length " n1 " vs " n2; exit 1 }
             d = 0; m = 0
             for (i = 0; i < n1; i++) { e = a[i] - b[i]; if (e < 0) e = -e; if (e > d) d = e
                                        v = b[i]; if (v < 0) v = -v; if (v > m) m = v }
             r = d / m; print "max rel diff " r; exit (r <= tol + 0 ? 0 : 1) }' "$1" "$2"
}

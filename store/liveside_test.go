package store

import (
	"testing"
)

// LiveSide decides as LiveFromClaims would with the exact number of live
// claims, whatever the held and expired claims around them; it counts
// no claim when the held counters already tell, never past the cap, and
// about as many as the smaller of the live and the expired claims.
func TestLiveSideDecidesAsTheExactCount(t *testing.T) {
	for _, limit := range []int{0, 1, 11, 51, 1001} {
		for _, listed := range []int64{0, 1, 20, 100, 10000, 100000} {
			for _, live := range []int64{0, 1, 20, 100, 1000, 10000, 100000} {
				for _, expired := range []int64{0, 3, 100, 10000, 100000} {
					if live > listed {
						continue
					}
					held := live + expired
					limitCap := LiveCountCap(limit, listed)
					if limitCap > 0 && LiveFromClaims(limit, listed, limitCap) || limitCap > 0 && !LiveFromClaims(limit, listed, limitCap-1) {
						t.Fatalf("LiveCountCap(%d, %d) = %d is not where the side changes", limit, listed, limitCap)
					}
					var reads []int64
					count := func(k int64) (int64, int64, error) {
						if k > limitCap {
							t.Fatalf("counted up to %d, more than the cap %d", k, limitCap)
						}
						reads = append(reads, min(expired, k)+min(live, k))
						return min(expired, k), min(live, k), nil
					}
					got, err := LiveSide(limit, listed, held, count)
					if err != nil {
						t.Fatal(err)
					}
					want := LiveFromClaims(limit, listed, live)
					if listed == 0 {
						want = false // nothing listed: either side reads nothing
					}
					if got != want {
						t.Errorf("limit %d, listed %d, live %d, expired %d: from claims %v, want %v", limit, listed, live, expired, got, want)
					}
					if held < limitCap && len(reads) > 0 {
						t.Errorf("limit %d, listed %d, held %d below the cap %d: read claims %v", limit, listed, held, limitCap, reads)
					}
					var total int64
					for _, r := range reads {
						total += r
					}
					// About the smaller of live and expired: the last
					// round's k is at most 4 times it (or 128), and the
					// rounds' k add up to less than 3 times the last.
					if bound := 2 * 3 * min(4*max(min(live, expired), 128), limitCap); total > bound {
						t.Errorf("limit %d, listed %d, live %d, expired %d: read %d claims over %d rounds, more than %d", limit, listed, live, expired, total, len(reads), bound)
					}
				}
			}
		}
	}
}

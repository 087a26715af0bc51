package embedded

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/ora-runtime/ora/shared/factref"
	"github.com/ora-runtime/ora/shared/ora"
)

// BenchmarkLedgerBytes says where a wave's ledger bytes go on SQLite: it
// sends ORA_LEDGER_BYTES_WAVES waves (default 300) from 4 senders into the
// embedded runtime once, whatever b.N is, then reads ledger.db and reports,
// per wave, the bytes of the observed-fact rows, of the orientation-packet
// rows and of the fact bodies they share (shared/factref), and how many
// references to fact bodies the two kinds' rows hold; each kind's rows and
// bytes per wave are printed. Run it with -benchtime 1x.
func BenchmarkLedgerBytes(b *testing.B) {
	rt, srv, src := benchRuntime(b)
	waves := envInt("ORA_LEDGER_BYTES_WAVES", 300)
	sendWaves(b, rt, srv, src, "bytes", waves, 4, func(int, time.Duration) {})
	db, err := sql.Open("sqlite", "file:"+filepath.Join(rt.cfg.DataDir, "ledger.db")+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT kind, body FROM ledger_entries`)
	if err != nil {
		b.Fatal(err)
	}
	type sum struct{ rows, bytes, refs int }
	kinds := map[ora.EntryKind]*sum{}
	for rows.Next() {
		var k ora.EntryKind
		var body []byte
		if err := rows.Scan(&k, &body); err != nil {
			b.Fatal(err)
		}
		s := kinds[k]
		if s == nil {
			s = &sum{}
			kinds[k] = s
		}
		s.rows++
		s.bytes += len(body)
		s.refs += bytes.Count(body, []byte{factref.Mark})
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	var bodies, bodyBytes int
	if err := db.QueryRow(`SELECT count(*), coalesce(sum(length(body)), 0) FROM fact_bodies`).Scan(&bodies, &bodyBytes); err != nil {
		b.Fatal(err)
	}
	w := float64(waves)
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, string(k))
	}
	sort.Strings(names)
	for _, k := range names {
		s := kinds[ora.EntryKind(k)]
		fmt.Fprintf(os.Stderr, "ledger bytes: %-22s %.1f rows, %.2f KB per wave\n", k, float64(s.rows)/w, float64(s.bytes)/1024/w)
	}
	fmt.Fprintf(os.Stderr, "ledger bytes: %-22s %.1f rows, %.2f KB per wave\n", "fact bodies", float64(bodies)/w, float64(bodyBytes)/1024/w)
	at := func(k ora.EntryKind) sum {
		if s := kinds[k]; s != nil {
			return *s
		}
		return sum{}
	}
	facts, packets := at(ora.KindObservedFact), at(ora.KindOrientationPacket)
	b.ReportMetric(float64(facts.bytes)/1024/w, "facts-KB/wave")
	b.ReportMetric(float64(packets.bytes)/1024/w, "packets-KB/wave")
	b.ReportMetric(float64(bodyBytes)/1024/w, "fact-bodies-KB/wave")
	b.ReportMetric(float64(facts.refs+packets.refs)/w, "fact-refs/wave")
}

package logclass

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/schedmate/schedmate/internal/logtext"
	"github.com/schedmate/schedmate/internal/shareddata"
)

// BenchmarkLine classifies every line of the real step-time logs.
func BenchmarkLine(b *testing.B) {
	files, _ := filepath.Glob(filepath.Join(shareddata.Dir(b, "steptime"), "*.log"))
	var lines []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		for _, raw := range bytes.Split(data, []byte{'\n'}) {
			lines = append(lines, logtext.Clean(raw))
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Line(lines[i%len(lines)])
	}
}

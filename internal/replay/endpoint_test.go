package replay

import (
	"context"
	"testing"

	"github.com/schedmate/schedmate/internal/advisor"
	"github.com/schedmate/schedmate/internal/trace"
)

// predictions replays the SWF sample through p and returns its answers.
func predictions(t *testing.T, p Predictor) []float64 {
	t.Helper()
	jobs := sampleSWF(t)
	var got []float64
	_, err := Run(context.Background(), jobs, []Predictor{p}, Options{
		OnPrediction: func(_ *trace.Job, pred []float64) { got = append(got, pred[0]) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestEndpointPredictor(t *testing.T) {
	builtin := predictions(t, Schedmate(advisor.DefaultOptions()))
	// Without vectors every search is the built-in one.
	none := SchedmateEndpoint(advisor.DefaultOptions(), func(*trace.Job) []int8 { return nil })
	for i, v := range predictions(t, none) {
		if v != builtin[i] {
			t.Fatalf("prediction %d: %v without vectors, %v built-in", i, v, builtin[i])
		}
	}
	if none.EndpointSearches() != 0 {
		t.Errorf("%d endpoint searches without vectors", none.EndpointSearches())
	}
	// One vector for every job makes them all alike: every search with
	// history compares endpoint vectors and finds all of it similar.
	same := SchedmateEndpoint(advisor.DefaultOptions(), func(*trace.Job) []int8 { return []int8{1, 2, 3} })
	predictions(t, same)
	if same.EndpointSearches() == 0 || same.Last().Source != advisor.SourceSimilar {
		t.Errorf("%d endpoint searches, last source %s", same.EndpointSearches(), same.Last().Source)
	}
}

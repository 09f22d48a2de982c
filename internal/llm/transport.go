package llm

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// maxResponseBytes bounds one HTTP answer; a larger one is a bad answer.
const maxResponseBytes = 16 << 20

var errBodyTooLarge = fmt.Errorf("response body larger than %d bytes", maxResponseBytes)

// attemptInfo carries what the transport saw of one HTTP answer back to the
// retry loop, through the request's context.
type attemptInfo struct {
	status     int
	retryAfter time.Duration
}

type attemptKey struct{}

func withAttempt(ctx context.Context) (context.Context, *attemptInfo) {
	info := &attemptInfo{}
	return context.WithValue(ctx, attemptKey{}, info), info
}

// boundedDoer wraps an HTTP client: it bounds answer bodies and records the
// status and Retry-After of each answer for the retry loop.
type boundedDoer struct {
	client *http.Client
}

// Do sends req and bounds the body of the answer.
func (d boundedDoer) Do(req *http.Request) (*http.Response, error) {
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, err
	}
	if info, ok := req.Context().Value(attemptKey{}).(*attemptInfo); ok {
		info.status = resp.StatusCode
		info.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	resp.Body = &limitedBody{r: io.LimitReader(resp.Body, maxResponseBytes+1), c: resp.Body}
	return resp, nil
}

type limitedBody struct {
	r    io.Reader
	c    io.Closer
	read int64
}

// Read implements io.Reader.
func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += int64(n)
	if b.read > maxResponseBytes {
		return n, errBodyTooLarge
	}
	return n, err
}

// Close implements io.Closer.
func (b *limitedBody) Close() error { return b.c.Close() }

// parseRetryAfter reads a Retry-After header: delta seconds or an HTTP date.
// It returns 0 when the header is absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 || secs > 24*3600 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

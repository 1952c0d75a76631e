// Package jsonapi is the load generators' one JSON request over HTTP: a body
// encoded, a bearer token, a bounded read of the answer, a 2xx decoded.
package jsonapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// maxAnswer bounds how much of an answer is read.
const maxAnswer = 1 << 20

// Call sends body (JSON; nil for none) to url with a bearer token (none when empty)
// and decodes a 2xx answer into out (when not nil). It returns the status and, for
// another status, the answer's body (at most 1 MiB) for the caller's messages; err
// is a failed exchange or an undecodable 2xx answer.
func Call(ctx context.Context, client *http.Client, method, url, token string, body, out any) (status int, refused []byte, err error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return resp.StatusCode, nil, err
	}
	if resp.StatusCode/100 != 2 {
		return resp.StatusCode, data, nil
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, nil, fmt.Errorf("%s %s: decode answer: %w", method, url, err)
		}
	}
	return resp.StatusCode, nil, nil
}

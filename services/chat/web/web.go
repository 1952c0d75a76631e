// Package web is the chat's browser client: one page of plain HTML, CSS and
// JavaScript, embedded in the binary and served at / by internal/realtime.
package web

import "embed"

// FS holds index.html, app.js and style.css.
//
//go:embed index.html app.js style.css
var FS embed.FS

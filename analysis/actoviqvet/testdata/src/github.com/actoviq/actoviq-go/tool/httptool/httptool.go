// Package httptool is a stub of the real package's API surface the
// analyzer matches on (same import path).
package httptool

import "net/http"

type Config struct{ Dedupes bool }

type Client struct{}

type Response struct{ Status int }

func New(cfg *Config) (*Client, error) { return &Client{}, nil }

func (c *Client) Do(req *http.Request) (*Response, error) { return &Response{}, nil }

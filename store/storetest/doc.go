// Package storetest is the conformance suite every store backend passes.
//
// A backend's test calls [Run] with a [Backend] that can make a fresh
// database for each test and open any number of independent handles on it,
// so that races between connections (and, for SQLite and PostgreSQL,
// between separate connection pools as separate processes would have) are
// part of the suite.
//
// It is a test helper: production code never imports it.
package storetest

// Package storemem is the in-memory reference backend of the store SPI.
//
// It keeps everything in maps behind one mutex, so every method is atomic
// and every write is a revision compare-and-swap exactly as the durable
// backends do it. Data is lost when the process ends: use it for tests,
// examples and short-lived runs whose crash safety does not matter.
package storemem

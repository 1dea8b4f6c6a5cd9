package once

import "time"

// SetWriteTimeout sets the budget of the writes made after fn returned
// and returns a function that restores it.
func SetWriteTimeout(d time.Duration) (restore func()) {
	old := writeTimeout
	writeTimeout = d
	return func() { writeTimeout = old }
}

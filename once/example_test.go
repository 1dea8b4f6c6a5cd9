package once_test

import (
	"context"
	"fmt"

	"github.com/actoviq/actoviq-go/once"
	"github.com/actoviq/actoviq-go/store/storemem"
)

func ExampleDo() {
	s := storemem.New(nil)
	defer s.Close()
	ctx := context.Background()

	// The key is stable for this order and is also handed to the payment
	// provider as its idempotency key: if a crash makes fn run again, the
	// provider answers with the first charge instead of charging twice.
	key := "order-42/charge"
	charge := func(ctx context.Context) (string, error) {
		fmt.Println("charging with idempotency key", key)
		return "ch_001", nil // the provider's charge id
	}

	for range 3 {
		id, err := once.Do(ctx, s, key, charge)
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Println("charge", id)
	}
	// Output:
	// charging with idempotency key order-42/charge
	// charge ch_001
	// charge ch_001
	// charge ch_001
}

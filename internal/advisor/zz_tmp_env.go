package advisor

import (
	"os"
	"strconv"
)

func init() {
	if v, err := strconv.ParseFloat(os.Getenv("SM_RW"), 64); err == nil {
		runningWeight = v
	}
}

var useWindow = os.Getenv("SM_WIN") != ""

package sdk

import (
	"fmt"

	"github.com/kubeplug/kubeplug/abi"
	"github.com/kubeplug/kubeplug/sdk/internal/raw"
)

// Level is the severity of a log record.
type Level uint32

// Log levels, as the host's kubeplug_write_log import knows them.
const (
	LevelDebug = Level(abi.LogDebug)
	LevelInfo  = Level(abi.LogInfo)
	LevelWarn  = Level(abi.LogWarn)
	LevelError = Level(abi.LogError)
)

// Log writes msg to the host log, tagged with the module's name. In wasm it
// calls the host import kubeplug_write_log (which truncates messages beyond 4
// KiB); in native tests the sdktest harness captures it.
//
//	sdk.Log(sdk.LevelInfo, "claims retained")
func Log(level Level, msg string) { raw.WriteLog(uint32(level), msg) }

// Logf formats like fmt.Sprintf and writes the result as Log does.
func Logf(level Level, format string, args ...any) {
	raw.WriteLog(uint32(level), fmt.Sprintf(format, args...))
}

package nodehealth

import "github.com/schedmate/schedmate/internal/config"

// GPUSpoolDir returns the directory that carries per-job GPU figures from
// the nodes to the controller: health.gpu_spool_dir, else a directory beside
// the database.
func GPUSpoolDir(cfg config.Health, storePath string) string {
	if cfg.GPUSpoolDir != "" {
		return cfg.GPUSpoolDir
	}
	return storePath + ".gpu-spool"
}

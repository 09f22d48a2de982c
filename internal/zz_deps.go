//go:build tools

package internal

import (
	_ "github.com/BurntSushi/toml"
	_ "github.com/NVIDIA/go-nvml/pkg/nvml"
	_ "github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	_ "github.com/charmbracelet/bubbles/progress"
	_ "github.com/charmbracelet/bubbles/table"
	_ "github.com/charmbracelet/bubbles/textinput"
	_ "github.com/charmbracelet/bubbles/viewport"
	_ "github.com/charmbracelet/bubbletea"
	_ "github.com/charmbracelet/lipgloss"
	_ "github.com/muesli/termenv"
	_ "github.com/rogpeppe/go-internal/testscript"
	_ "github.com/sashabaranov/go-openai"
	_ "github.com/spf13/cobra"
	_ "github.com/spf13/cobra/doc"
	_ "github.com/spf13/viper"
	_ "go.etcd.io/bbolt"
	_ "golang.org/x/term"
	_ "gopkg.in/yaml.v3"
)

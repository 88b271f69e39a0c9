package cli

import "github.com/netreconcile/netreconcile/internal/model"

const defaultProtocol = model.DefaultProtocol

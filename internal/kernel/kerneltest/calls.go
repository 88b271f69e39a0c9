package kerneltest

// Call names a kernel call for failure injection: a method of
// kernel.Interface, or one write of a batch call. A struct rather than a
// string, so that a misspelt call is a compile error instead of a failure
// that never fires; TestCallsCoverTheInterface holds the list to the
// interface.
type Call struct{ name string }

// String returns the call's name, as Fired and Log print it.
func (c Call) String() string { return c.name }

// The calls of kernel.Interface that can fail.
var (
	CallLinks                   = Call{"Links"}
	CallAddresses               = Call{"Addresses"}
	CallRoutes                  = Call{"Routes"}
	CallTableRoutes             = Call{"TableRoutes"}
	CallRoutesWithKeys          = Call{"RoutesWithKeys"}
	CallRules                   = Call{"Rules"}
	CallFouPorts                = Call{"FouPorts"}
	CallSysctls                 = Call{"Sysctls"}
	CallNFTTable                = Call{"NFTTable"}
	CallNFTTableHandle          = Call{"NFTTableHandle"}
	CallNFTTables               = Call{"NFTTables"}
	CallWireGuardDevice         = Call{"WireGuardDevice"}
	CallAddLink                 = Call{"AddLink"}
	CallDeleteLink              = Call{"DeleteLink"}
	CallChangeLink              = Call{"ChangeLink"}
	CallSetLinkMTU              = Call{"SetLinkMTU"}
	CallSetLinkUp               = Call{"SetLinkUp"}
	CallSetLinkMaster           = Call{"SetLinkMaster"}
	CallSetLinkAlias            = Call{"SetLinkAlias"}
	CallPromoteSecondaries      = Call{"PromoteSecondaries"}
	CallReplaceAddress          = Call{"ReplaceAddress"}
	CallDeleteAddress           = Call{"DeleteAddress"}
	CallAddRule                 = Call{"AddRule"}
	CallDeleteRule              = Call{"DeleteRule"}
	CallAddFou                  = Call{"AddFou"}
	CallDeleteFou               = Call{"DeleteFou"}
	CallSetSysctl               = Call{"SetSysctl"}
	CallNFTApply                = Call{"NFTApply"}
	CallConfigureWireGuard      = Call{"ConfigureWireGuard"}
	CallStartUserspaceWireGuard = Call{"StartUserspaceWireGuard"}
)

// The writes inside one batch call, each failing on its own.
var (
	// CallAddRoute, CallReplaceRoute and CallDeleteRoute are the writes
	// of WriteRoutes (object: the route key's String()).
	CallAddRoute     = Call{"AddRoute"}
	CallReplaceRoute = Call{"ReplaceRoute"}
	CallDeleteRoute  = Call{"DeleteRoute"}
	// CallConfigureWireGuardPeer is one peer of ConfigureWireGuard
	// (object: the public key in base64).
	CallConfigureWireGuardPeer = Call{"ConfigureWireGuardPeer"}
)

// Calls lists every call that can be made to fail.
var Calls = []Call{
	CallLinks, CallAddresses, CallRoutes, CallTableRoutes, CallRoutesWithKeys, CallRules, CallFouPorts, CallSysctls,
	CallNFTTable, CallNFTTableHandle, CallNFTTables, CallWireGuardDevice,
	CallAddLink, CallDeleteLink, CallChangeLink, CallSetLinkMTU, CallSetLinkUp, CallSetLinkMaster,
	CallSetLinkAlias, CallPromoteSecondaries, CallReplaceAddress, CallDeleteAddress,
	CallAddRule, CallDeleteRule, CallAddFou, CallDeleteFou, CallSetSysctl, CallNFTApply,
	CallConfigureWireGuard, CallStartUserspaceWireGuard,
	CallAddRoute, CallReplaceRoute, CallDeleteRoute, CallConfigureWireGuardPeer,
}

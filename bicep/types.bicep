metadata name = 'rmqbench types'
metadata description = 'User-defined types shared by main.bicep and its modules, which import them at compile time (https://learn.microsoft.com/azure/azure-resource-manager/bicep/bicep-import). Deploys nothing.'

// =============== //
//   Definitions   //
// =============== //

// User-defined types (https://learn.microsoft.com/azure/azure-resource-manager/bicep/user-defined-data-types): a caller's
// editor and `bicep build` check a value against them, and ARM validates it again at deployment (a literal union
// compiles to `allowedValues`, an object type's `*` to `additionalProperties`).

@export()
@description('An availability zone of a region, as ARM names it in a resource\'s `zones`: the string \'1\', \'2\' or \'3\' (a region with zones has three), not a number.')
type availabilityZoneType = '1' | '2' | '3'

@export()
@description('Resource tags: any tag name with a string value (the controller tags every resource with its run id and expiry).')
type tagsType = {
  @description('Optional. A tag\'s value under its name, e.g. project: \'rmqbench\'.')
  *: string
}

@export()
@description('JetStream\'s sync_interval on every NATS server: how often a server fsyncs its stream files, or \'always\' to fsync after every write (nats-server reads a duration string or "always": nats-io/nats-server server/opts.go, `case "sync", "sync_interval"`). nats-server\'s default is \'2m\'. A literal union, so ARM refuses any other value (allowedValues).')
type natsSyncIntervalType = 'always' | '100ms' | '1s' | '5s' | '10s' | '30s' | '1m' | '2m' | '5m' | '10m'

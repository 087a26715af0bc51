package embedded

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/ora-runtime/ora/shared/act"
	"github.com/ora-runtime/ora/shared/bedrock"
	"github.com/ora-runtime/ora/shared/motor"
)

// RecordingsDir is where the golden set's recorded model responses are
// kept: the recordings folder of operate.golden_dir, or of the data folder
// for the set that ships with ora.
func (c Config) RecordingsDir() string {
	if c.Operate.GoldenDir != "" {
		return filepath.Join(c.Operate.GoldenDir, "recordings")
	}
	return filepath.Join(c.DataDir, "recordings")
}

// ReplayBuild returns the reasoner the promotion gate replays the golden
// set through: nil (the rules reasoner of each motor version) unless
// reasoner.kind is bedrock; then the configured Bedrock reasoner, each
// version's model profile laid over, over a Bedrock client whose HTTP client
// is hc: a bedrock.Replayer in the gate (no call leaves the process; static
// credentials sign what nobody receives), a bedrock.Recorder in `ora motor
// record` (the configured credentials). The model sees the catalogue of the
// configured actions, connections and functions. Errors: EINVALID
// (reasoner.bedrock).
func (c Config) ReplayBuild(ctx context.Context, hc bedrockruntime.HTTPClient) (motor.ReplayBuild, error) {
	if c.Reasoner.Kind != "bedrock" {
		return nil, nil
	}
	_, replaying := hc.(*bedrock.Replayer)
	client, err := bedrock.NewClient(ctx, func(o *bedrock.ClientOptions) {
		o.Endpoint, o.Region, o.HTTPClient = c.Reasoner.BedrockEndpoint, c.Reasoner.Region, hc
		if o.Region == "" && replaying {
			o.Region = "us-east-1"
		}
		if replaying {
			o.Credentials = credentials.NewStaticCredentialsProvider("replay", "replay", "")
		}
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: bedrock client: %w", err)
	}
	names := make([]string, 0, len(c.Connections))
	for _, cn := range c.Connections {
		names = append(names, cn.Name)
	}
	catalogue := act.StandardCatalogue(c.Actions, names...)
	if d, ok := act.DescribeFunctions(c.Functions); ok {
		catalogue = append(catalogue, d)
	}
	return motor.ModelReplay(bedrock.New(client), c.Reasoner.Bedrock, catalogue), nil
}

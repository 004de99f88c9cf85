"""Service tools: image, video and speech generation, messaging, Discord, Home Assistant and Feishu."""

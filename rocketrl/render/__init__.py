"""See a bot play: replays drawn to MP4, GIF or PNG frames (`rocketrl render`), and `rocketrl watch`, which
plays a game and renders it. Pillow draws the frames, imageio with imageio-ffmpeg encodes them."""
